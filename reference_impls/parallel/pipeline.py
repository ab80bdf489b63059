"""Pipeline parallelism: GPipe and 1F1B (PipeDream-Flush) schedules over point-to-point sends.

Papers: Y. Huang, Y. Cheng, A. Bapna, O. Firat, D. Chen, M. Chen, H. Lee, J. Ngiam, Q. V. Le,
Y. Wu and Z. Chen, "GPipe: Efficient Training of Giant Neural Networks using Pipeline
Parallelism", NeurIPS 2019, arXiv:1811.06965 (GPipe); D. Narayanan, A. Phanishayee, K. Shi,
X. Chen and M. Zaharia, "Memory-Efficient Pipeline-Parallel DNN Training", ICML 2021,
arXiv:2006.09503 (PipeDream-Flush, the 1F1B schedule with a flush).

Algorithm (p ranks, rank s holds stage s of a sequential model, m equal micro-batches):

1. A schedule is the ordered list of actions of one stage: ("F", i) runs micro-batch i
   forward, ("B", i) runs it backward.
   - GPipe: F 0 .. m-1, then B 0 .. m-1: m micro-batches' activations are alive at once.
   - 1F1B: w = min(p - s - 1, m) warm-up forwards, then alternate one forward and one
     backward until every forward has run, then the w remaining backwards. At most
     min(p - s, m) micro-batches are alive on stage s.
2. Forward of micro-batch i: stage 0 takes its slice of the inputs, any other stage receives
   the activation from stage s - 1; the stage runs its module; the last stage computes the loss
   divided by m, every other stage sends the activation to stage s + 1.
3. Backward of micro-batch i: the last stage differentiates its loss, any other stage receives
   the output gradient from s + 1; stage s > 0 sends the gradient of its input to s - 1.
4. Gradients accumulate over the m micro-batches, so after the step every stage holds the
   gradient of the mean loss over the whole batch, the same as unpipelined training. Both
   schedules are synchronous (the flush): the optimizer steps after all m backwards.

Sends are posted without waiting (and awaited at the end of the step), receives are awaited
at once: a stage never blocks on a send, which keeps 1F1B's crossing messages deadlock-free.

Communication cost per step (cost model ``gpipe``, variant ``bubble``): every activation
crosses each stage boundary once forward (n bytes for one micro-batch) and its gradient once
backward, so a middle stage sends 2 m n bytes, the first stage m n (activations only) and the
last stage m n (gradients only). Same for both schedules; only the order and memory differ.

Example::

    stage = full_model[rank]                                   # rank's slice of the layers
    result = one_f_one_b_step(stage, x if rank == 0 else None, y, F.mse_loss,
                              micro_batches=8, input_shape=(mb, hidden))
    optimizer.step()                                           # every stage, after the flush
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from torch import nn

from reference_impls.comm.wire import irecv, isend, wait_all
from reference_impls.registry import reference_impl

Action = tuple[str, int]  # ("F" | "B", micro-batch index)
LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def gpipe_schedule(stages: int, stage: int, micro_batches: int) -> list[Action]:
    """All forwards, then all backwards (the same on every stage)."""
    _check_schedule_args(stages, stage, micro_batches)
    forwards = [("F", i) for i in range(micro_batches)]
    return forwards + [("B", i) for i in range(micro_batches)]


def one_f_one_b_schedule(stages: int, stage: int, micro_batches: int) -> list[Action]:
    """Warm-up forwards, steady one-forward-one-backward, cool-down backwards."""
    _check_schedule_args(stages, stage, micro_batches)
    warmup = min(stages - stage - 1, micro_batches)
    actions: list[Action] = [("F", i) for i in range(warmup)]
    for i in range(warmup, micro_batches):
        actions += [("F", i), ("B", i - warmup)]
    return actions + [("B", i) for i in range(micro_batches - warmup, micro_batches)]


def _check_schedule_args(stages: int, stage: int, micro_batches: int) -> None:
    if stages < 1 or not 0 <= stage < stages:
        raise ValueError(f"stage must be in [0, stages), got stage={stage}, stages={stages}")
    if micro_batches < 1:
        raise ValueError(f"micro_batches must be >= 1, got {micro_batches}")


@dataclass
class PipelineResult:
    """What one pipelined step did on this stage."""

    loss: torch.Tensor | None  # mean loss over the batch, on the last stage only
    trace: list[Action] = field(default_factory=list)  # actions in the order they completed
    peak_alive: int = 0  # most micro-batches whose activations were held at once


def run_schedule(
    stage_module: nn.Module,
    actions: list[Action],
    inputs: torch.Tensor | None,
    targets: torch.Tensor | None,
    loss_fn: LossFn,
    input_shape: tuple[int, ...] | None,
    group: dist.ProcessGroup | None = None,
) -> PipelineResult:
    """Execute ``actions`` on this rank's stage; gradients accumulate into its parameters.

    ``inputs`` (stage 0) and ``targets`` (last stage) hold the whole batch, split here into
    equal micro-batches; ``input_shape`` is one micro-batch's activation entering this stage
    (stages > 0 receive into a buffer of that shape).
    """
    p, s = dist.get_world_size(group), dist.get_rank(group)
    m = sum(1 for kind, _ in actions if kind == "F")
    first, last = s == 0, s == p - 1
    inputs_mb = _split(inputs, m, "inputs") if first else None
    targets_mb = _split(targets, m, "targets") if last else None
    if not first and input_shape is None:
        raise ValueError("input_shape is required on every stage but the first")
    reference = next(stage_module.parameters())
    alive: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # micro-batch -> (input, output)
    sends: list = []  # (work, tensor): the tensor must live until its send completes
    zero = torch.zeros((), dtype=reference.dtype, device=reference.device)
    result = PipelineResult(loss=zero if last else None)
    for kind, i in actions:
        if kind == "F":
            if first:
                x = inputs_mb[i]
            else:
                x = torch.empty(input_shape, dtype=reference.dtype, device=reference.device)
                irecv(x, s - 1, group).wait()
                x.requires_grad_(True)
            with torch.enable_grad():
                y = stage_module(x)
                if last:
                    y = loss_fn(y, targets_mb[i]) / m  # the mean over the batch, piece by piece
            if last:
                result.loss = result.loss + y.detach()
            else:
                outgoing = y.detach().contiguous()
                sends.append((isend(outgoing, s + 1, group), outgoing))
            alive[i] = (x, y)
            result.peak_alive = max(result.peak_alive, len(alive))
        else:
            x, y = alive.pop(i)  # dropping the graph frees this micro-batch's activations
            if last:
                y.backward()
            else:
                grad = torch.empty_like(y)
                irecv(grad, s + 1, group).wait()
                y.backward(grad)
            if not first:
                sends.append((isend(x.grad.contiguous(), s - 1, group), x.grad))
        result.trace.append((kind, i))
    wait_all([work for work, _ in sends])
    return result


def _split(batch: torch.Tensor | None, m: int, what: str) -> list[torch.Tensor]:
    if not isinstance(batch, torch.Tensor):
        raise TypeError(f"{what}: a tensor is required on this stage, got {type(batch).__name__}")
    if batch.shape[0] % m:
        raise ValueError(f"{what}: batch size {batch.shape[0]} must divide into {m} micro-batches")
    return list(batch.chunk(m))


@reference_impl
def gpipe_step(
    stage_module: nn.Module,
    inputs: torch.Tensor | None,
    targets: torch.Tensor | None,
    loss_fn: LossFn,
    micro_batches: int,
    input_shape: tuple[int, ...] | None = None,
    group: dist.ProcessGroup | None = None,
) -> PipelineResult:
    """One GPipe step (forward and backward of the batch; the caller then steps its optimizer)."""
    p, s = dist.get_world_size(group), dist.get_rank(group)
    actions = gpipe_schedule(p, s, micro_batches)
    return run_schedule(stage_module, actions, inputs, targets, loss_fn, input_shape, group)


@reference_impl
def one_f_one_b_step(
    stage_module: nn.Module,
    inputs: torch.Tensor | None,
    targets: torch.Tensor | None,
    loss_fn: LossFn,
    micro_batches: int,
    input_shape: tuple[int, ...] | None = None,
    group: dist.ProcessGroup | None = None,
) -> PipelineResult:
    """One 1F1B (PipeDream-Flush) step: the same gradients as GPipe, at most p - s alive."""
    p, s = dist.get_world_size(group), dist.get_rank(group)
    actions = one_f_one_b_schedule(p, s, micro_batches)
    return run_schedule(stage_module, actions, inputs, targets, loss_fn, input_shape, group)
