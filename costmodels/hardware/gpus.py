"""GPUs: vendor peak throughput, memory and memory bandwidth, each with where it was checked.

Peaks are the vendor's dense numbers (NVIDIA datasheets quote tensor-core numbers "with
sparsity", twice the dense rate; we store the dense half). fp32 is the non-tensor-core rate.
Bandwidths are SI bytes per second (vendor "GB/s" and "TB/s" are decimal).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GPU:
    """One accelerator's published peaks (TFLOP/s are 1e12 floating-point operations per second).

    ``bf16_tflops`` is None where the chip has no bf16 tensor cores (Volta, Turing).
    ``memory_gib`` is the vendor's "GB" of device memory, which for HBM and GDDR parts is a
    binary size (16, 32, 80 GiB ...), so it is stored as GiB.
    """

    name: str
    fp16_tflops: float
    bf16_tflops: float | None
    fp32_tflops: float
    memory_gib: float
    memory_bandwidth_Bps: float
    source: str

    @property
    def memory_bytes(self) -> int:
        return int(self.memory_gib * 2**30)


_A100 = (
    "NVIDIA A100 datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf) as tabulated on "
    "glennklockwood.com/garden/processors/A100; memory bandwidth also on thundercompute.com "
    "'NVIDIA A100 specs' (40GB SXM 1,555 GB/s, 80GB SXM 2,039 GB/s)"
)
_H100 = (
    "NVIDIA H100 datasheet as tabulated on archive-lib.hpctech.co.jp/gpuproduct/nvidia-h100.html "
    "(SXM: FP16/BF16 tensor 1,979 TFLOPS with sparsity, FP32 67, 80 GB, 3,350 GB/s; PCIe: 1,513, "
    "51, 80 GB, 2,000 GB/s) and glennklockwood.com/garden/processors/h100 (dense 989.4)"
)

GPUS: dict[str, GPU] = {
    g.name: g
    for g in (
        GPU("V100 SXM2", 125.0, None, 15.7, 32, 900e9,
            "NVIDIA Tesla V100 datasheet figures (SXM2: 125 tensor TFLOPS, 15.7 FP32, 32/16 GB "
            "HBM2, 900 GB/s) as quoted on grokipedia 'Nvidia Tesla V100' and, for 125 tensor "
            "TFLOPS, developer.nvidia.com 'Programming Tensor Cores in CUDA 9'; 900 GB/s also "
            "io-tech.fi on the V100 PCIe. fp16 is mixed-precision tensor (fp32 accumulate)."),
        GPU("A100 40GB SXM", 312.0, 312.0, 19.5, 40, 1555e9, _A100),
        GPU("A100 80GB SXM", 312.0, 312.0, 19.5, 80, 2039e9, _A100),
        GPU("H100 SXM", 989.4, 989.4, 66.9, 80, 3.35e12, _H100),
        GPU("H100 PCIe", 756.5, 756.5, 51.0, 80, 2.0e12,
            _H100 + "; dense = half of the 1,513 sparse figure"),
        GPU("H200 SXM", 989.4, 989.4, 66.9, 141, 4.8e12,
            "Same GH100 compute as H100 SXM (lzwjava.github.io 'NVIDIA H200 GPU Specifications', "
            "aiminingco.com/gpu/h200/specs: 141 GB HBM3e, 4.8 TB/s, FP8 3,958 TFLOPS with "
            "sparsity as on H100); compute peaks therefore those of H100 SXM (" + _H100 + ")"),
        GPU("RTX 2080 Ti", 26.9, None, 13.45, 11, 616e9,
            "Reference-clock figures on gpu.spicedreamphone.com (TU102: 11 GB GDDR6, 616.0 GB/s, "
            "FP32 13.45 TFLOPS, FP16 26.90 TFLOPS non-tensor); 616 GB/s also on 3dfxzone.it. "
            "fp16 here is the non-tensor rate: the tensor-core peak for this GeForce part could "
            "not be verified from a stored source, so it is left out (a lower bound)."),
    )
}  # fmt: skip


# Short names people type; the SXM part is the default where a PCIe one also exists.
_ALIASES = {"v100": "V100 SXM2", "a100": "A100 80GB SXM", "a10040gb": "A100 40GB SXM",
            "a10080gb": "A100 80GB SXM", "h100": "H100 SXM", "h200": "H200 SXM",
            "2080ti": "RTX 2080 Ti"}  # fmt: skip


def get_gpu(name: str) -> GPU:
    """A GPU by name or short alias ("h100"), ignoring case, spaces, hyphens and underscores."""
    wanted = _key(name)
    for gpu_name, gpu in GPUS.items():
        if _key(gpu_name) == wanted:
            return gpu
    if wanted in _ALIASES:
        return GPUS[_ALIASES[wanted]]
    raise ValueError(f"unknown GPU {name!r}; choices: {', '.join(GPUS)}")


def _key(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())
