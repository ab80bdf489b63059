"""Check the host-time method of llm_host_probe.py against forwards timed on a real GPU.

    .venv/bin/python benchmarks/host_method_check.py    (needs: pip install transformers)

llm_host_probe.py estimates a layer's host time on a GPU as its CPU-backend time here plus the
CUDA host work per launched kernel (cuda_dispatch_cost.py). ``costmodels/data/h200_profile.json``
holds forwards timed with CUDA events on one H200 (../shared/tools/gpu_profile.py, torch 2.11):
BERT-base and BERT-large in bf16 autocast at batch 32, sequence 128. Their GPU work is small
(about 1 and 3 TFLOP, a few ms at the H200's measured matmul rate) next to what was measured
(12 and 26 ms, about 1 ms per layer for both), so those forwards are host-bound and their time is
the host's. This script builds the same models (transformers' default attention) with tiny
widths, times their forward on the CPU backend under bf16 autocast, counts the kernels a GPU
would launch (top-level ATen ops as the probe counts them, plus autocast's float32 -> bfloat16
casts, which the profiler does not list: a TorchDispatchMode sees them) and prints the method's
estimate beside the measurement. The CPU backend's attention runs the unfused math path, so the
CPU-side time leans high; the bfloat16 -> float32 casts of that path are not counted.
fp32 forwards (GPU-bound: TF32 off) are not comparable and not printed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from cuda_dispatch_cost import PROFILE, cpu_seconds, launches_of, measure  # noqa: E402

MODELS = {"bert-base-bf16": 12, "bert-large-bf16": 24}  # profile key: layers
TINY = {"vocab_size": 1024, "hidden_size": 64, "num_attention_heads": 2, "intermediate_size": 256}


class _AutocastCasts(TorchDispatchMode):
    """Counts float32 -> bfloat16 copies reaching the backend (autocast's casts)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        kwargs = kwargs or {}
        if (func.overloadpacket.__name__ == "_to_copy" and args[0].dtype == torch.float32
                and kwargs.get("dtype") == torch.bfloat16):  # fmt: skip
            self.count += 1
        return func(*args, **kwargs)


def forward_of(layers: int) -> Callable[[], torch.Tensor]:
    from transformers import BertConfig, BertForPreTraining

    torch.manual_seed(0)
    model = BertForPreTraining(BertConfig(num_hidden_layers=layers, **TINY)).train()
    ids = torch.randint(0, TINY["vocab_size"], (2, 16))

    def forward() -> torch.Tensor:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(ids)
            return (out.prediction_logits.float().pow(2).mean()
                    + out.seq_relationship_logits.float().pow(2).mean())  # fmt: skip

    return forward


def main() -> int:
    try:
        import transformers  # noqa: F401
    except ImportError:
        print("needs transformers (pip install transformers); nothing measured")
        return 1
    profile = json.loads(PROFILE.read_text())["models"]
    per_launch = measure()["per_launch_s"]
    print(f"CUDA host work per launch (cuda_dispatch_cost.py): {per_launch * 1e6:.1f} us")
    for key, layers in MODELS.items():
        forward = forward_of(layers)
        forward()
        cpu = cpu_seconds(forward, repeats=5, calls=20)
        top = launches_of(forward)
        with _AutocastCasts() as casts:
            forward()
        estimate = cpu + (top + casts.count) * per_launch
        measured = profile[key]["fwd_s"]
        print(f"{key} forward: CPU backend {cpu * 1e3:.2f} ms + ({top} ops + {casts.count} "
              f"casts) x {per_launch * 1e6:.1f} us = {estimate * 1e3:.2f} ms; H200 measured "
              f"{measured * 1e3:.2f} ms ({100 * (estimate / measured - 1):+.1f} %)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
