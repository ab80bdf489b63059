"""GPUs: vendor peak throughput, memory and memory bandwidth, each with where it was checked.

Peaks are the vendor's dense numbers (NVIDIA datasheets quote tensor-core numbers "with
sparsity", twice the dense rate; we store the dense half). fp32 is the non-tensor-core rate.
Bandwidths are SI bytes per second (vendor "GB/s" and "TB/s" are decimal). ``nvlink_Bps`` is the
GPU-to-GPU fabric (NVLink, or AMD Infinity Fabric) per GPU and per direction: half the
"total" or "bidirectional" figure vendors print. ``sm_count`` (streaming multiprocessors, or
AMD compute units) is what a GEMM's thread-block tiles are spread over (wave quantisation in
costmodels/llm/gemm.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GPU:
    """One accelerator's published peaks (TFLOP/s are 1e12 floating-point operations per second).

    ``bf16_tflops`` is None where the chip has no bf16 tensor cores (Volta, Turing), and
    ``fp8_tflops`` None where it has no fp8 tensor cores (before Hopper). ``memory_gib`` is the
    vendor's "GB" of device memory, which for HBM and GDDR parts is a binary size (16, 32,
    80 GiB ...), so it is stored as GiB. ``nvlink_Bps`` is None where the part has no
    GPU-to-GPU fabric in its usual server.
    """

    name: str
    fp16_tflops: float
    bf16_tflops: float | None
    fp32_tflops: float
    memory_gib: float
    memory_bandwidth_Bps: float
    source: str
    fp8_tflops: float | None = None
    nvlink_Bps: float | None = None
    sm_count: int | None = None
    fp4_tflops: float | None = None  # dense FP4 (NVFP4) tensor peak, Blackwell and newer

    def __post_init__(self) -> None:
        for field in ("fp16_tflops", "fp32_tflops", "memory_gib", "memory_bandwidth_Bps"):
            if not getattr(self, field) > 0:
                raise ValueError(f"GPU.{field} must be positive, got {getattr(self, field)!r}")
        for field in ("bf16_tflops", "fp8_tflops", "nvlink_Bps", "sm_count", "fp4_tflops"):
            value = getattr(self, field)
            if value is not None and not value > 0:
                raise ValueError(f"GPU.{field} must be positive or None, got {value!r}")

    @property
    def memory_bytes(self) -> int:
        return int(self.memory_gib * 2**30)


_A100 = (
    "NVIDIA A100 datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf: BF16/FP16 tensor "
    "312 TFLOPS dense, FP32 19.5) as tabulated on glennklockwood.com/garden/processors/A100; "
    "memory bandwidth also on thundercompute.com "
    "'NVIDIA A100 specs' (40GB SXM 1,555 GB/s, 80GB SXM 2,039 GB/s); NVLink 3: 600 GB/s total, "
    "300 GB/s each way (glennklockwood.com A100: '300+300 GB/s NVLink'); 108 SMs "
    "(notes.haroldbenoit.com GPU hardware notes: 'A100-80GB has ... 108 Streaming "
    "Multiprocessors')"
)
_H100 = (
    "NVIDIA H100 datasheet as tabulated on archive-lib.hpctech.co.jp/gpuproduct/nvidia-h100.html "
    "(SXM: FP16/BF16 tensor 1,979 TFLOPS with sparsity, FP8 3,958 with sparsity, FP32 67, 80 GB, "
    "3,350 GB/s, 132 SMs, NVLink 900 GB/s; PCIe: 1,513, FP8 3,026, 51, 80 GB, 2,000 GB/s, 114 SMs, "
    "NVLink 600 GB/s; 'Specifications 1/2 lower without sparsity') and "
    "glennklockwood.com/garden/processors/h100 (dense BF16 989.4, FP8 1978.9)"
)
_BLACKWELL = (
    "glennklockwood.com/garden/processors/B200 (NVIDIA figures: HGX B200 at 1,000 W dense "
    "BF16/FP16 2,250, FP8 4,500 TFLOPS; the GB200 variant at 1,200 W dense BF16/FP16 2,500, FP8 "
    "5,000, FP32 90); verda.com 'GB300 NVL72 architecture' per-GPU table (B200: FP32 0.075 "
    "PFLOPS, 180 GB HBM3E, 7.7 TB/s; NVLink 5 '1.8 TB/s total bandwidth (900 GB/s "
    "unidirectional)'); hmc-tech.com B200 page: 148 SMs"
)
_FP4 = (
    "; dense FP4 (NVFP4) = half of NVIDIA's sparse figure: HGX B200 18 and GB200 NVL72 20 PFLOPS "
    "FP4 Tensor Core per GPU (NVIDIA's GB200 NVL72 / HGX B200 specification table as reproduced "
    "on zdszero.github.io Computer/Artificial_Intelligence/Hardware; hmc-tech.com 'B200 vs "
    "GB200': FP4 9 PFLOPS Tensor, 18 sparse, for B200)"
)

_BLACKWELL_ULTRA = (
    "Blackwell Ultra, dense (no sparsity) per GPU: verda.com 'NVIDIA GB300 NVL72: GPU Architecture "
    "& Performance' per-GPU table (GB300: FP4 15 PFLOPS, FP8 5 PFLOPS, FP16/BF16 2.5 PFLOPS, "
    "FP32 0.080, 8 TB/s, TDP 1.4 kW; B300: FP4 14, FP8 4.5, FP16/BF16 2.25 PFLOPS, FP32 0.075, "
    "7.7 TB/s, TDP 1.1 kW; NVLink 5 '1.8 TB/s total bandwidth (900 GB/s unidirectional)'), i.e. "
    "BF16 2,500 / 2,250 and FP8 5,000 / 4,500 TFLOPS; glennklockwood.com/garden/processors/B300 "
    "(HGX B300 BF16 2250, FP8 4500 dense; '288 GB HBM3e (8 stacks, 12-high)', '8 TB/s (max)'; "
    "GB300 NVL72 '20 TB HBM at 576 TB/s' = 8 TB/s per GPU); memory 288 GB per GPU: acecloud.ai "
    "'NVIDIA HGX B300' (288 GB HBM3e per GPU, 2.30 TB per 8-GPU node, up to 8 TB/s), aiwiki.ai "
    "DGX B300 (2.3 TB), awesomeagents.ai GB300 NVL72 (288 GB per GPU, 20.7 TB per rack; '160 "
    "streaming multiprocessors'). verda lists 270 GB (B300) / 279 GB (GB300) as usable; the "
    "vendor's 288 is stored, as for the other presets"
)

GPUS: dict[str, GPU] = {
    g.name: g
    for g in (
        GPU("V100 SXM2", 125.0, None, 15.7, 32, 900e9,
            "NVIDIA Tesla V100 datasheet figures (SXM2: 125 tensor TFLOPS, 15.7 FP32, 32/16 GB "
            "HBM2, 900 GB/s) as quoted on grokipedia 'Nvidia Tesla V100' and, for 125 tensor "
            "TFLOPS, developer.nvidia.com 'Programming Tensor Cores in CUDA 9'; 900 GB/s also "
            "io-tech.fi on the V100 PCIe. fp16 is mixed-precision tensor (fp32 accumulate). "
            "olcf.ornl.gov Summit V100 guide: 80 SMs, NVLink 'peak bandwidth of 25 GB/s (in each "
            "direction)' per link; SXM2 has six links, so 150 GB/s each way (300 GB/s total).",
            nvlink_Bps=150e9, sm_count=80),
        GPU("A100 40GB SXM", 312.0, 312.0, 19.5, 40, 1555e9, _A100,
            nvlink_Bps=300e9, sm_count=108),
        GPU("A100 80GB SXM", 312.0, 312.0, 19.5, 80, 2039e9, _A100,
            nvlink_Bps=300e9, sm_count=108),
        GPU("H100 SXM", 989.4, 989.4, 66.9, 80, 3.35e12, _H100,
            fp8_tflops=1978.9, nvlink_Bps=450e9, sm_count=132),
        GPU("H100 PCIe", 756.5, 756.5, 51.0, 80, 2.0e12,
            _H100 + "; dense = half of the 1,513 (FP8 3,026) sparse figures; NVLink is the "
            "600 GB/s two-GPU bridge, 300 GB/s each way",
            fp8_tflops=1513.0, nvlink_Bps=300e9, sm_count=114),
        # Variants (issue 26). Compute peaks, SMs and (unless said) NVLink as H100 SXM where
        # the part is the same GH100 chip.
        GPU("H100 SXM 96GB", 989.4, 989.4, 66.9, 96, 2.4e12,
            "H100 SXM with 96 GB HBM2e at 2.4 TB/s, as in Meta's Grand Teton hosts: 'Each H100 "
            "GPU is equipped with 96GB HBM2e with 2.4 TB/sec peak memory bandwidth' "
            "(pytorch/torchtitan benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md); the "
            "same part measured as 'H100: HBM2e, 94 GiB, 2.41 TB/s' (Ujeniya et al., "
            "arXiv:2604.11391). Compute, SMs and NVLink: " + _H100,
            fp8_tflops=1978.9, nvlink_Bps=450e9, sm_count=132),
        GPU("H800 SXM", 989.4, 989.4, 66.9, 80, 3.35e12,
            "H800: the H100 SXM's GH100 chip for export-restricted markets with 'NVLink "
            "bandwidth ... reduced to only 400 GB/s total aggregate bidirectional bandwidth' "
            "(tumgag.com / philisun.com 'NVIDIA H800 vs H100'; 'Memory capacity and bandwidth "
            "(e.g., 3.35 TB/s) largely consistent', FP8/FP16 compute as H100); 200 GB/s each "
            "way; DeepSeek-V3's H800 nodes: 'NVLink (160 GB/s)' achieved (arXiv:2412.19437, "
            "Sec. 3.2.2). Compute: " + _H100,
            fp8_tflops=1978.9, nvlink_Bps=200e9, sm_count=132),
        GPU("H20", 148.0, 148.0, 44.0, 96, 4.0e12,
            "NVIDIA H20: 96 GB HBM3, 4,000 GB/s, 148 TFLOPS FP16 dense, NVLink 4.0 (900 GB/s), "
            "400 W (willitrunai.com H20 page; huggingface.co/hardware/h20: 96GB, 148 TFLOPS, "
            "400W); 78 SMs, FP16 dense 148, INT8 296, FP32 44 (zangshuxian.com, Geekbench "
            "report). FP8 dense taken equal to the INT8 rate (296), as on every Hopper part "
            "(estimate: no stored source gives the FP8 figure itself)",
            fp8_tflops=296.0, nvlink_Bps=450e9, sm_count=78),
        GPU("GH200", 989.4, 989.4, 66.9, 96, 4.0e12,
            "GPU of the GH200 Grace Hopper superchip: an H100-class Hopper GPU with '96 GB of "
            "HBM3 on the GPU side' and 480 GB LPDDR5X on the CPU side over NVLink-C2C (900 GB/s)"
            " (spheron.network GH200 guide; aiwiki.ai GH200); compute as H100 SXM (" + _H100 +
            "). The 4.0 TB/s HBM3 bandwidth is NVIDIA's commonly quoted figure but was NOT "
            "verified in a stored source (estimate); the 144 GB HBM3e version is not listed",
            fp8_tflops=1978.9, nvlink_Bps=450e9, sm_count=132),
        GPU("MI325X", 1307.4, 1307.4, 163.4, 256, 6.0e12,
            "AMD Instinct MI325X: the MI300X's CDNA 3 compute (304 CUs; FP16/BF16 1,307.4, FP8 "
            "2,614.9, FP32 163.4 TFLOP/s dense) with 256 GB HBM3E at 6 TB/s (awesomeagents.ai "
            "MI325X specification table; aiwiki.ai MI325X: 'retaining the same CDNA 3 compute "
            "architecture ... 256 GB ... 6 TB/s'); TDP ~1,000 W (yobitel.com). Infinity Fabric "
            "as MI300X (448 GB/s each way)",
            fp8_tflops=2614.9, nvlink_Bps=448e9, sm_count=304),
        GPU("H200 SXM", 989.4, 989.4, 66.9, 141, 4.8e12,
            "Same GH100 compute as H100 SXM (lzwjava.github.io 'NVIDIA H200 GPU Specifications', "
            "aiminingco.com/gpu/h200/specs: 141 GB HBM3e, 4.8 TB/s, FP8 3,958 TFLOPS with "
            "sparsity as on H100); compute peaks, SMs and NVLink therefore those of H100 SXM ("
            + _H100 + ")",
            fp8_tflops=1978.9, nvlink_Bps=450e9, sm_count=132),
        GPU("B200", 2250.0, 2250.0, 75.0, 180, 7.7e12, _BLACKWELL + _FP4,
            fp8_tflops=4500.0, nvlink_Bps=900e9, sm_count=148, fp4_tflops=9000.0),
        GPU("GB200", 2500.0, 2500.0, 90.0, 186, 8.0e12,
            "One B200 GPU of a GB200 superchip at 1,200 W: " + _BLACKWELL + "; memory: GB200 "
            "NVL72 'about 13.4 TB of unified GPU memory' for 72 GPUs (aiwiki.ai GB200 NVL72, "
            "citing NVIDIA) = 186 GB each, 8 TB/s per GPU (gpu.blog GB200 NVL72 page; "
            "glennklockwood.com B200: '8 TB/s (max)')" + _FP4,
            fp8_tflops=5000.0, nvlink_Bps=900e9, sm_count=148, fp4_tflops=10000.0),
        # Blackwell Ultra (issue 39): HGX/DGX B300 at 1,100 W and the GB300 superchip's GPU at
        # 1,400 W; the B300's memory bandwidth is the 8 TB/s of NVIDIA's HGX figures
        GPU("B300", 2250.0, 2250.0, 75.0, 288, 8.0e12, _BLACKWELL_ULTRA,
            fp8_tflops=4500.0, nvlink_Bps=900e9, sm_count=160, fp4_tflops=14000.0),
        GPU("GB300", 2500.0, 2500.0, 80.0, 288, 8.0e12, _BLACKWELL_ULTRA,
            fp8_tflops=5000.0, nvlink_Bps=900e9, sm_count=160, fp4_tflops=15000.0),
        GPU("MI300X", 1307.4, 1307.4, 163.4, 192, 5.3e12,
            "AMD Instinct MI300X: dense BF16 1,307.4 and FP8 2,614.9 TFLOP/s, 5.3 TB/s HBM3, "
            "192 GB (github.com/alpharomercoma/MI300X-vs-H200 METHODOLOGY.md spec table); "
            "304 compute units (rocm.docs.amd.com 'AMD GPU specifications': 304 = 38 per XCD "
            "on CDNA3; gpu.blog MI300X: 304 CUs); FP32 163.4 is AMD's FP32 matrix rate (the "
            "vector rate is half); Infinity Fabric 896 GB/s aggregate (gpu.blog) of 128 GB/s "
            "bidirectional links (emergentmind.com MI300X summary), 448 GB/s each way",
            fp8_tflops=2614.9, nvlink_Bps=448e9, sm_count=304),
        GPU("MI355X", 2516.6, 2516.6, 157.3, 288, 8.0e12,
            "AMD Instinct MI355X (CDNA 4, gfx950): 288 GB HBM3E at 8 TB/s (theregister.com "
            "2025-06-12; boston.co.uk MI355X); 256 compute units, FP32 157.3 TFLOP/s "
            "(svethardware.cz MI350X/MI355X); FP8 dense 8,192 FLOPs per CU per clock (ISSCC "
            "2026 report on world-today-news.com: 'five petaflops') = 256 x 8,192 x 2.4 GHz = "
            "5,033 TFLOP/s; FP16/BF16 taken as half the FP8 rate (estimate: the dense FP16 "
            "figure itself was not found in a stored source); FP4 dense 10,066 (20.1 PFLOP/s "
            "with sparsity, tomshardware.com). Infinity Fabric links of ~153 GB/s bidirectional "
            "(humeconsulting.co), 7 x 76.8 = 537.6 GB/s each way",
            fp8_tflops=5033.2, nvlink_Bps=537.6e9, sm_count=256, fp4_tflops=10066.3),
        GPU("L40S", 362.05, 362.05, 91.6, 48, 864e9,
            "NVIDIA L40/L40S datasheet table as listed on mullet.se (L40S: BF16/FP16 tensor "
            "362.05 dense (362.1 to one decimal), 733 with sparsity; FP8 733 dense, 1,466 with "
            "sparsity; FP32 91.6; "
            "48 GB GDDR6, 864 GB/s; PCIe Gen4 x16, no NVLink); omegaco.ae L40S page (the same "
            "sparse figures); 142 SMs (m.reach.dog L40S specification list: 'SM Count 142'). "
            "GDDR6 'GB' stored as GiB like the other presets (an estimate of the usable size).",
            fp8_tflops=733.0, sm_count=142),
        GPU("RTX Pro 6000", 503.8, 503.8, 125.95, 96, 1792e9,
            "NVIDIA RTX PRO 6000 Blackwell (GB202, 188 SMs; the Workstation, Max-Q and Server "
            "editions share the core configuration): hmc-tech.com 'RTX PRO 6000 Blackwell' "
            "(dense BF16/FP16 tensor 503.8 TFLOPS, FP8 1.01 PFLOPS, FP4 2.02 PFLOPS, 4.03 with "
            "sparsity, i.e. FP8 1,010 TFLOPS dense; FP32 125.95); gpu.name (96 GB GDDR7 on 512 "
            "bits, 1,792 GB/s, PCIe Gen 5); "
            "188 SMs (topcpu.net GTC 2025 report). PCIe only, no NVLink. The Server Edition's "
            "clocks may differ from the workstation card these figures describe (estimate).",
            fp8_tflops=1010.0, sm_count=188, fp4_tflops=2020.0),
        GPU("RTX 2080 Ti", 26.9, None, 13.45, 11, 616e9,
            "Reference-clock figures on gpu.spicedreamphone.com (TU102: 11 GB GDDR6, 616.0 GB/s, "
            "FP32 13.45 TFLOPS, FP16 26.90 TFLOPS non-tensor); 616 GB/s also on 3dfxzone.it. "
            "fp16 here is the non-tensor rate: the tensor-core peak for this GeForce part could "
            "not be verified from a stored source, so it is left out (a lower bound). NVLink "
            "bridge: Turing 'NVLink 2.0 ... 100 GB/s bidirectional' (developer.aliyun.com GPU "
            "architecture review), 50 GB/s each way. SM count not verified for the cut-down "
            "2080 Ti die (the full TU102 has 72), so left unset.",
            nvlink_Bps=50e9),
    )
}  # fmt: skip


# Short names people type; the SXM part is the default where a PCIe one also exists.
_ALIASES = {"v100": "V100 SXM2", "a100": "A100 80GB SXM", "a10040gb": "A100 40GB SXM",
            "a10080gb": "A100 80GB SXM", "h100": "H100 SXM", "h200": "H200 SXM",
            "2080ti": "RTX 2080 Ti", "b200": "B200", "gb200": "GB200", "mi300x": "MI300X",
            "h100pcie": "H100 PCIe", "l40s": "L40S", "rtxpro6000": "RTX Pro 6000",
            "rtxpro6000blackwell": "RTX Pro 6000"}  # fmt: skip


# Short names of the variants (issue 26)
_VARIANT_ALIASES = {"h10096gb": "H100 SXM 96GB", "h100sxm96gb": "H100 SXM 96GB", "h800": "H800 SXM",
                    "gh200": "GH200", "mi325x": "MI325X", "h20": "H20",
                    "mi355x": "MI355X", "b300": "B300", "gb300": "GB300",
                    "blackwellultra": "B300"}  # fmt: skip


def get_gpu(name: str) -> GPU:
    """A GPU by name or short alias ("h100"), ignoring case, spaces, hyphens and underscores."""
    wanted = _key(name)
    for gpu_name, gpu in GPUS.items():
        if _key(gpu_name) == wanted:
            return gpu
    if wanted in _ALIASES:
        return GPUS[_ALIASES[wanted]]
    if wanted in _VARIANT_ALIASES:
        return GPUS[_VARIANT_ALIASES[wanted]]
    raise ValueError(f"unknown GPU {name!r}; choices: {', '.join(GPUS)}")


def _key(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())
