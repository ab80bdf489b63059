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
time: the machine may be shared), best of ``--repeats`` rounds. A GPU run adds the host work of
a CUDA op beyond the CPU backend's (caching allocator, device and stream, kernel submission) for
every kernel the probe's ATen trace launches (``traced_launches``): measured from the H200
profile the project ships (benchmarks/cuda_dispatch_cost.py: the profile's host-bound op
sequences against the same sequences on the CPU backend here, 8.7 us per launch when written;
the launch alone is "about 4-6 us", susun-blog.com, "pegainfer (3): From Launch Overhead to CUDA
Graph", RTX 5070 Ti, CUDA 13.0, which the earlier probe used).
The result, per kernel the model counts for such a layer (costmodels/llm/layer_ops.py,
``megatron-legacy``, forward + recomputed forward + backward), is the start value of
host_s_per_kernel in the LOSO refits (costmodels.validation.loso.host_prior). It is a lower bound
for the stacks vTrain measured: newer PyTorch and Python dispatch faster, and the probe leaves
out DeepSpeed's engine and activation-checkpointing code, apex's own Python checks and the host
work of the tensor-parallel collectives. benchmarks/host_method_check.py checks the method (CPU
backend here + CUDA host work per launch) against the H200 profile's host-bound BERT forwards.
``--write`` stores it in costmodels/data/llm-host-probe.json.
"""

from __future__ import annotations

import argparse
import platform
import sys
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

sys.path.insert(0, str(ROOT / "benchmarks"))
from cuda_dispatch_cost import PROFILE, aten_launches, cpu_seconds, measure  # noqa: E402

HIDDEN, HEADS, SEQ, LAYERS = 64, 4, 8, 12


class _TensorParallelEdge(torch.autograd.Function):
    """Megatron's copy-to / reduce-from tensor-parallel region at TP 1: identity both ways, but
    a Python autograd function, as Megatron's are."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:  # noqa: ANN001
        return x

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:  # noqa: ANN001
        return grad


class _Linear(torch.autograd.Function):
    """Megatron-DeepSpeed's tensor-parallel linear (``LinearWithGradAccumulationAndAsync
    Communication``): a Python autograd function whose backward computes the input gradient,
    flattens both operands to 2-D, accumulates the weight gradient into ``weight.grad`` and sums
    the bias gradient, op by op."""

    @staticmethod
    def forward(ctx, x, weight, bias):  # noqa: ANN001, ANN205
        ctx.save_for_backward(x, weight)
        ctx.use_bias = bias is not None
        out = torch.matmul(x, weight.t())
        return out + bias if bias is not None else out

    @staticmethod
    def backward(ctx, grad):  # noqa: ANN001, ANN205
        x, weight = ctx.saved_tensors
        grad_input = grad.matmul(weight)
        grad = grad.contiguous()
        grad = grad.view(grad.shape[0] * grad.shape[1], grad.shape[2])
        flat = x.view(x.shape[0] * x.shape[1], x.shape[2])
        if weight.grad is None:
            weight.grad = grad.t().matmul(flat)
        else:
            weight.grad += grad.t().matmul(flat)
        return grad_input, None, grad.sum(dim=0) if ctx.use_bias else None


class _LayerNorm(torch.autograd.Function):
    """apex's fused LayerNorm as Megatron calls it: a Python autograd function around one
    forward and one backward extension call, its inputs made contiguous first."""

    @staticmethod
    def forward(ctx, x, weight, bias):  # noqa: ANN001, ANN205
        x, weight, bias = x.contiguous(), weight.contiguous(), bias.contiguous()
        out, mean, rstd = torch.native_layer_norm(x, (HIDDEN,), weight, bias, 1e-5)
        ctx.save_for_backward(x, weight, bias, mean, rstd)
        return out

    @staticmethod
    def backward(ctx, grad):  # noqa: ANN001, ANN205
        x, weight, bias, mean, rstd = ctx.saved_tensors
        return torch.ops.aten.native_layer_norm_backward(
            grad.contiguous(), x, (HIDDEN,), mean, rstd, weight, bias, [True, True, True]
        )


class _CausalSoftmax(torch.autograd.Function):
    """Megatron's scale + upper-triangular mask + softmax: one extension call each way (here one
    softmax op; the mask and the scale are inside Megatron's kernel), the scale passed as a
    tensor."""

    @staticmethod
    def forward(ctx, scores, scale):  # noqa: ANN001, ANN205
        scale_t = torch.tensor([scale])
        probs = torch._softmax(scores, -1, False)
        ctx.save_for_backward(probs, scale_t)
        return probs

    @staticmethod
    def backward(ctx, grad):  # noqa: ANN001, ANN205
        probs, _scale = ctx.saved_tensors
        return torch._softmax_backward_data(grad, probs, -1, probs.dtype), None


class _BiasGeLU(torch.autograd.Function):
    """Megatron's bias + GeLU: a Python autograd function around one fused kernel each way."""

    @staticmethod
    def forward(ctx, x, bias):  # noqa: ANN001, ANN205
        ctx.save_for_backward(x, bias)
        return F.gelu(x + bias, approximate="tanh")

    @staticmethod
    def backward(ctx, grad):  # noqa: ANN001, ANN205
        x, bias = ctx.saved_tensors
        dx = torch.ops.aten.gelu_backward(grad, x + bias, approximate="tanh")
        return dx, dx.sum(dim=(0, 1))


class MegatronStyleLayer(torch.nn.Module):
    """One GPT layer as the ``megatron-legacy`` kernel set runs it (module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        h = HIDDEN

        def weight(*shape: int) -> torch.nn.Parameter:
            return torch.nn.Parameter(torch.randn(*shape) * 0.02)

        self.norm1_w, self.norm1_b = weight(h), weight(h)
        self.norm2_w, self.norm2_b = weight(h), weight(h)
        self.qkv_w, self.qkv_b = weight(3 * h, h), weight(3 * h)
        self.proj_w, self.proj_b = weight(h, h), weight(h)
        self.fc1_w, self.fc1_b = weight(4 * h, h), weight(4 * h)
        self.fc2_w, self.fc2_b = weight(h, 4 * h), weight(h)
        self.rng_state = torch.get_rng_state()  # the tensor-parallel RNG tracker's state

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        s, b, head = x.shape[0], x.shape[1], HIDDEN // HEADS
        mixed = _Linear.apply(_TensorParallelEdge.apply(x), self.qkv_w, self.qkv_b)
        q, k, v = torch.split(mixed.view(s, b * HEADS, 3 * head), head, dim=-1)
        scores = torch.baddbmm(torch.empty(b * HEADS, s, s), q.transpose(0, 1),
                               k.transpose(0, 1).transpose(1, 2), beta=0.0,
                               alpha=head**-0.5)  # fmt: skip
        probs = _CausalSoftmax.apply(scores.view(-1, s, s), 1.0).view(b, HEADS, s, s)
        outer = torch.get_rng_state()  # the tracker's fork(): swap in its state, swap back
        torch.set_rng_state(self.rng_state)
        probs = F.dropout(probs, 0.1, True)
        self.rng_state = torch.get_rng_state()
        torch.set_rng_state(outer)
        probs = probs.view(b * HEADS, s, s)
        context = torch.bmm(probs, v.transpose(0, 1)).view(b, HEADS, s, head)
        context = context.permute(2, 0, 1, 3).contiguous().view(s, b, HIDDEN)
        return _TensorParallelEdge.apply(_Linear.apply(context, self.proj_w, None))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.attention(_LayerNorm.apply(x, self.norm1_w, self.norm1_b))
        x = x + F.dropout(out + self.proj_b.expand_as(x), 0.1, True)
        hidden = _Linear.apply(_TensorParallelEdge.apply(
            _LayerNorm.apply(x, self.norm2_w, self.norm2_b)), self.fc1_w, None)  # fmt: skip
        out = _TensorParallelEdge.apply(_Linear.apply(_BiasGeLU.apply(hidden, self.fc1_b),
                                                      self.fc2_w, None))  # fmt: skip
        return x + F.dropout(out + self.fc2_b.expand_as(x), 0.1, True)


def one_step(layers: torch.nn.ModuleList) -> None:
    x = torch.randn(SEQ, 1, HIDDEN, requires_grad=True)
    for layer in layers:
        x = checkpoint(layer, x, use_reentrant=True)
    x.sum().backward()


def host_s_per_layer(repeats: int, steps: int = 20) -> float:
    """Best-of-``repeats`` CPU seconds per layer of forward + recomputed forward + backward."""
    torch.manual_seed(0)
    layers = torch.nn.ModuleList([MegatronStyleLayer() for _ in range(LAYERS)])
    for _ in range(3):
        one_step(layers)
    return cpu_seconds(lambda: one_step(layers), repeats, steps) / LAYERS


def traced_launches() -> float:
    """GPU kernels one such layer would launch: the top-level ATen ops of one profiled step
    (forward, recomputed forward, backward) that are not views or metadata
    (cuda_dispatch_cost.aten_launches), per layer (randn and ones_like start the probe's step,
    not a layer)."""
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    layers = torch.nn.ModuleList([MegatronStyleLayer() for _ in range(LAYERS)])
    one_step(layers)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        one_step(layers)
    return aten_launches(prof.events()) / LAYERS


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
    launches, traced = modelled_launches(), traced_launches()
    dispatch = measure()
    cuda = dispatch["per_launch_s"]
    per_kernel = (cpu + traced * cuda) / launches
    print(f"host CPU time per layer (forward + recomputed forward + backward): {cpu * 1e6:.0f} us")
    print(f"GPU kernels per layer: {traced:.1f} in the probe's trace (+ {cuda * 1e6:.1f} us CUDA "
          f"host work each), {launches} in the model -> host_s_per_kernel start "
          f"{per_kernel * 1e6:.1f} us")  # fmt: skip
    if args.write:
        record = {
            "host_s_per_kernel": per_kernel,
            "cpu_s_per_layer": cpu,
            "modelled_launches_per_layer": launches,
            "cuda_launches_per_layer": traced,
            "cuda_launch_host_s": cuda,
            "cuda_launch_source": (
                f"benchmarks/cuda_dispatch_cost.py: {PROFILE.relative_to(ROOT)} "
                f"({dispatch['profile_device']}, torch {dispatch['profile_torch']}), CUDA-event "
                "time of its host-bound op sequences at 1-4 Mi elements less one pass and less "
                "the same sequences' CPU-backend time here, regressed on their kernel launches "
                f"(intercept {dispatch['intercept_s'] * 1e6:.1f} us)"),
            "cuda_dispatch_points": [[x, y] for x, y in dispatch["points"]],
            "method": "benchmarks/llm_host_probe.py: CPU time of a Megatron-style GPT layer "
                      "(hidden 64, sequence 8, per-layer checkpointing) in eager PyTorch on the "
                      "CPU backend, best of rounds, plus the CUDA host work of each kernel its "
                      "ATen trace launches, divided by the kernels the model counts",
            "machine": platform.processor() or platform.machine(),
            "torch": torch.__version__,
        }  # fmt: skip
        write_atomic(HOST_PROBE, json_text(record, indent=2) + "\n")
        print(f"wrote {HOST_PROBE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
