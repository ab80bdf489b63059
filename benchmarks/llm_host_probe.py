"""Host time of one Megatron-style GPT layer in eager PyTorch: the start of host_s_per_kernel.

    .venv/bin/python benchmarks/llm_host_probe.py [--write] [--repeats N]

Why: the step model prices a host-bound phase at its kernel launches x ``host_s_per_kernel``
(costmodels/llm/kernel_time.py). Only vTrain's small models are host-bound among the dev
sources, so a fit without vTrain cannot see the constant (every other source's error is the same
from 5 to 50 us per kernel) and the leave-one-source-out refit needs a value that comes from
elsewhere. This probe measures one: the host work of a layer written the way Megatron-LM 2021 /
Megatron-DeepSpeed write it (the ``megatron-legacy`` kernel set: LayerNorm, a fused QKV linear,
an unfused attention with baddbmm, masked softmax, dropout and bmm, the context transpose, the
output projection with its bias + dropout + residual, LayerNorm, MLP with bias + GeLU, and the
tensor-parallel identity / reduce autograd functions around the linears), with per-layer
activation checkpointing (forward, recomputed forward, backward: vTrain's rows all checkpoint).

How: tiny tensors (hidden 64, sequence 8) on the CPU backend, so the arithmetic is negligible
and what is timed is Python, autograd and ATen dispatch; CPU time of this process (not wall
time: the machine may be shared), best of ``--repeats`` rounds. A GPU run adds the CUDA launch
of each kernel on top: ``CUDA_LAUNCH_HOST_S``, "about 4-6 us" per kernel submission (susun-blog.
com, "pegainfer (3): From Launch Overhead to CUDA Graph", RTX 5070 Ti, CUDA 13.0; found with
the search tool), 5 us. The result, per kernel the model counts for such a layer (costmodels/llm/
layer_ops.py, ``megatron-legacy``, forward + recomputed forward + backward), is the start value
of host_s_per_kernel in the LOSO refits (costmodels.validation.loso.host_prior). It is a lower
bound for 2021-era stacks: newer PyTorch dispatches faster, and Megatron-DeepSpeed adds apex's
Python wrappers, the tensor-parallel RNG tracker's forks and DeepSpeed's engine hooks, which the
probe leaves out. ``--write`` stores it in costmodels/data/llm-host-probe.json.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from costmodels.llm.frameworks import get_kernel_set  # noqa: E402
from costmodels.llm.layer_ops import LayerShard, layer_kernels  # noqa: E402
from costmodels.llm.shapes import TransformerShape  # noqa: E402
from costmodels.safe_output import json_text, write_atomic  # noqa: E402
from costmodels.validation.loso import HOST_PROBE  # noqa: E402

HIDDEN, HEADS, SEQ, LAYERS = 64, 4, 8, 12
CUDA_LAUNCH_HOST_S = 5e-6
LAUNCH_SOURCE = (
    "susun-blog.com/blog/pegainfer-3-cuda-graph: 'Every time the CPU submits a "
    "kernel to the GPU ... about 4-6 us' (RTX 5070 Ti, CUDA 13.0)"
)


class _TensorParallelEdge(torch.autograd.Function):
    """Megatron's copy-to / reduce-from tensor-parallel region at TP 1: identity both ways, but
    a Python autograd function, as Megatron's are."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:  # noqa: ANN001
        return x

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:  # noqa: ANN001
        return grad


class MegatronStyleLayer(torch.nn.Module):
    """One GPT layer as the ``megatron-legacy`` kernel set runs it (module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        h = HIDDEN
        self.norm1, self.norm2 = torch.nn.LayerNorm(h), torch.nn.LayerNorm(h)
        self.qkv = torch.nn.Linear(h, 3 * h)
        self.proj = torch.nn.Linear(h, h, bias=False)
        self.fc1 = torch.nn.Linear(h, 4 * h, bias=False)
        self.fc2 = torch.nn.Linear(4 * h, h, bias=False)
        self.proj_bias = torch.nn.Parameter(torch.zeros(h))
        self.fc1_bias = torch.nn.Parameter(torch.zeros(4 * h))
        self.fc2_bias = torch.nn.Parameter(torch.zeros(h))

    def attention(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        s, b, head = x.shape[0], x.shape[1], HIDDEN // HEADS
        mixed = self.qkv(_TensorParallelEdge.apply(x)).view(s, b * HEADS, 3 * head)
        q, k, v = torch.split(mixed, head, dim=-1)
        scores = torch.baddbmm(torch.empty(b * HEADS, s, s), q.transpose(0, 1),
                               k.transpose(0, 1).transpose(1, 2), beta=0.0,
                               alpha=head**-0.5)  # fmt: skip
        scores = scores.view(b, HEADS, s, s).masked_fill(mask, -10000.0)
        probs = F.dropout(F.softmax(scores, dim=-1), 0.1, True).view(b * HEADS, s, s)
        context = torch.bmm(probs, v.transpose(0, 1)).view(b, HEADS, s, head)
        context = context.permute(2, 0, 1, 3).contiguous().view(s, b, HIDDEN)
        return _TensorParallelEdge.apply(self.proj(context))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        out = self.attention(self.norm1(x), mask)
        x = x + F.dropout(out + self.proj_bias.expand_as(x), 0.1, True)
        hidden = F.gelu(self.fc1(_TensorParallelEdge.apply(self.norm2(x))) + self.fc1_bias)
        out = _TensorParallelEdge.apply(self.fc2(hidden))
        return x + F.dropout(out + self.fc2_bias.expand_as(x), 0.1, True)


def one_step(layers: torch.nn.ModuleList, mask: torch.Tensor) -> None:
    x = torch.randn(SEQ, 1, HIDDEN, requires_grad=True)
    for layer in layers:
        x = checkpoint(layer, x, mask, use_reentrant=True)
    x.sum().backward()


def host_s_per_layer(repeats: int, steps: int = 20) -> float:
    """Best-of-``repeats`` CPU seconds per layer of forward + recomputed forward + backward."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    layers = torch.nn.ModuleList([MegatronStyleLayer() for _ in range(LAYERS)])
    mask = torch.ones(1, 1, SEQ, SEQ, dtype=torch.bool).triu(1)
    for _ in range(3):
        one_step(layers, mask)
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(steps):
            one_step(layers, mask)
        best = min(best, (time.process_time() - start) / steps / LAYERS)
    return best


def modelled_launches() -> int:
    """Kernel launches the model counts for one such layer: forward, recomputed forward and
    backward (costmodels/llm/layer_ops.py, ``megatron-legacy``, TP 1)."""
    shape = TransformerShape(layers=LAYERS, hidden=1024, heads=16, seq_len=1024, vocab=50257)
    kernels = layer_kernels(shape, LayerShard(1, 1024, 1024, 1, False), "fp16",
                            get_kernel_set("megatron-legacy"), None, None, 1, None)  # fmt: skip
    forward = sum(k.launches for k in kernels.forward)
    return 2 * forward + sum(k.launches for k in kernels.backward)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    cpu = host_s_per_layer(args.repeats)
    launches = modelled_launches()
    per_kernel = (cpu + launches * CUDA_LAUNCH_HOST_S) / launches
    print(f"host CPU time per layer (forward + recomputed forward + backward): {cpu * 1e6:.0f} us")
    print(
        f"modelled kernel launches per layer: {launches}; + {CUDA_LAUNCH_HOST_S * 1e6:.0f} us "
        f"CUDA launch each -> host_s_per_kernel start {per_kernel * 1e6:.1f} us"
    )
    if args.write:
        record = {
            "host_s_per_kernel": per_kernel,
            "cpu_s_per_layer": cpu,
            "modelled_launches_per_layer": launches,
            "cuda_launch_host_s": CUDA_LAUNCH_HOST_S,
            "cuda_launch_source": LAUNCH_SOURCE,
            "method": "benchmarks/llm_host_probe.py: CPU time of a Megatron-style GPT layer "
                      "(hidden 64, sequence 8, per-layer checkpointing) in eager PyTorch on the "
                      "CPU backend, best of rounds, plus the CUDA launch per modelled kernel, "
                      "divided by the modelled kernels",
            "machine": platform.processor() or platform.machine(),
            "torch": torch.__version__,
        }  # fmt: skip
        write_atomic(HOST_PROBE, json_text(record, indent=2) + "\n")
        print(f"wrote {HOST_PROBE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
