"""What ``commatlas check-ddp`` times under torchrun: a small MLP trained with PyTorch DDP.

Measured, on every rank, then reduced to one number per quantity (the median over the timed
iterations on each rank, then the maximum over ranks, since an iteration is done when its
slowest rank is):

1. the compute of one iteration with no communication: forward + loss and optimizer step, and
   backward, inside DDP's ``no_sync`` (the reducer runs but launches nothing);
2. in the same iterations, each gradient's ready time: a post-accumulate-grad hook on every
   parameter stamps the clock, relative to the start of ``loss.backward()`` (as the CommRecord
   timestamps of reference_impls.scheduling.WaitFreeBackprop);
3. per method, the time of a whole training iteration (forward, backward with its gradient
   exchange, optimizer step), and the same for the calibration hooks of
   commatlas/measure/ddp_probes.py (DDP with a hook that sends nothing; with the reference ring
   on every gradient);
4. per compressor and tensor, its exchange on a group of one rank (``dist.new_subgroups``):
   the hook's compression and decompression work without any message (:class:`ExchangeCompute`);
5. reference_impls' ring all-reduce, the collective the compressors' hooks run, at the sizes
   of the calibration (:class:`ReferenceRing`), fitted like any collective.

Everything is timed in rounds: one iteration of 1 and of every method of 3, then one sample of
4, 5 and, without a profile, of the quick calibration (:class:`QuickCalibration`), so that a change
in the machine's load (other jobs on a shared node) touches every number alike. The first
``warmup`` rounds (DDP rebuilds its buckets after the first iteration; allocator and connection
set-up) are dropped. Before each timed iteration or collective the ranks meet at a barrier. On
CUDA the clock is a CUDA event on the current stream, read after a synchronize; on CPU
``time.perf_counter``.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from commatlas.measure.collectives import fit_profile, measure
from commatlas.measure.ddp_probes import CALIBRATION_HOOKS, EACH, EACH_BUCKET_MB
from costmodels.calibration.ddp_methods import COMPRESSORS
from costmodels.calibration.profile import ClusterProfile, Measurement
from costmodels.gradients import Gradient
from reference_impls.collectives import ring_allreduce
from reference_impls.compression import allreduce_compressed, ddp_comm_hook, get


class Clock:
    """Marks on the host clock (CPU) or CUDA events (GPU); read ``seconds`` after ``sync``."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"

    def mark(self) -> Any:
        if not self.cuda:
            return time.perf_counter()
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def seconds(self, start: Any, end: Any) -> float:
        return start.elapsed_time(end) / 1e3 if self.cuda else end - start


def build_mlp(widths: Sequence[int], device: torch.device, seed: int = 0) -> torch.nn.Sequential:
    """Linear layers widths[0] -> widths[1] -> ... with ReLU between, initialised from a private
    generator (the same weights on every rank and every call, global RNG untouched: the layers
    are made on the meta device, so their own initialisation draws nothing)."""
    generator = torch.Generator().manual_seed(seed)
    layers: list[torch.nn.Module] = []
    for index, (fan_in, fan_out) in enumerate(zip(widths, widths[1:], strict=False)):
        linear = torch.nn.Linear(fan_in, fan_out, device="meta").to_empty(device="cpu")
        with torch.no_grad():
            bound = fan_in**-0.5  # nn.Linear's default range, drawn from our generator
            linear.weight.uniform_(-bound, bound, generator=generator)
            linear.bias.uniform_(-bound, bound, generator=generator)
        layers.append(linear)
        if index < len(widths) - 2:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers).to(device)


def synthetic_batch(
    widths: Sequence[int], batch_size: int, rank: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and regression targets from a generator seeded by the rank (each rank its shard)."""
    generator = torch.Generator().manual_seed(1_000 + rank)
    inputs = torch.randn(batch_size, widths[0], generator=generator)
    targets = torch.randn(batch_size, widths[-1], generator=generator)
    return inputs.to(device), targets.to(device)


class _Trainer:
    """One DDP replica of the MLP with its optimizer, optionally with a compression hook."""

    def __init__(self, method: str, widths: Sequence[int], device: torch.device, cap_mb: float):
        ids = [device.index] if device.type == "cuda" else None
        # An explicit bucket_cap_mb makes every bucket (the first included) that size, which is
        # the rule of the fusion schedule the prediction uses.
        cap_mb = EACH_BUCKET_MB if method == EACH else cap_mb
        self.model = DistributedDataParallel(
            build_mlp(widths, device), device_ids=ids, bucket_cap_mb=cap_mb
        )
        if method in COMPRESSORS:
            record, config, _ = COMPRESSORS[method]
            hook = ddp_comm_hook(get(record, **config), named_parameters=self.named())
            self.model.register_comm_hook(None, hook)
        elif (
            method in CALIBRATION_HOOKS
        ):  # commatlas/measure/ddp_probes.py: what DDP adds, measured
            self.model.register_comm_hook(None, CALIBRATION_HOOKS[method])
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=1e-3)

    def named(self) -> list[tuple[str, torch.nn.Parameter]]:
        return list(self.model.module.named_parameters())

    def step(
        self, batch: tuple[torch.Tensor, torch.Tensor], clock: Clock, sync: bool
    ) -> tuple[float, float, float, Any]:
        """(forward + step, backward, whole iteration) seconds, and the backward start mark;
        ``sync=False``: inside ``no_sync``, no gradient leaves the rank."""
        inputs, targets = batch
        context = self.model.no_sync() if not sync else contextlib.nullcontext()
        with context:
            start = clock.mark()
            loss = torch.nn.functional.mse_loss(self.model(inputs), targets)
            before = clock.mark()
            loss.backward()
            after = clock.mark()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        end = clock.mark()
        clock.sync()
        forward = clock.seconds(start, before) + clock.seconds(after, end)
        return forward, clock.seconds(before, after), clock.seconds(start, end), before


def _ready_hooks(trainer: _Trainer, clock: Clock, stamps: dict[str, Any]) -> list[Any]:
    def stamp(name: str) -> Callable[[torch.Tensor], None]:
        return lambda param: stamps.__setitem__(name, clock.mark())

    return [p.register_post_accumulate_grad_hook(stamp(n)) for n, p in trainer.named()]


def max_over_ranks(values: list[float], device: torch.device) -> list[float]:
    """Element-wise maximum over the ranks of the default group (the same list everywhere)."""
    tensor = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return tensor.tolist()


def measure_training(
    methods: Sequence[str], widths: Sequence[int], batch_size: int, warmup: int, iters: int,
    device: torch.device, bucket_cap_mb: float, samplers: Sequence[Callable[[], None]] = (),
) -> tuple[dict[str, float], float, float, list[Gradient]]:  # fmt: skip
    """Steps 1-3 of the module docstring: (iteration seconds per method, forward_s, backward_s,
    gradients in ready order); every rank returns the same numbers. Each of ``samplers`` is
    called once per round after the methods (all ranks together), so what they time sees the
    same load as the training; they drop the first ``warmup`` samples themselves."""
    clock = Clock(device)
    batch = synthetic_batch(widths, batch_size, dist.get_rank(), device)
    trainers = {name: _Trainer(name, widths, device, bucket_cap_mb) for name in methods}
    compute = _Trainer("allreduce", widths, device, bucket_cap_mb)
    stamps: dict[str, Any] = {}
    hooks = _ready_hooks(compute, clock, stamps)
    totals: dict[str, list[float]] = {name: [] for name in methods}
    forward, backward, ready = [], [], {name: [] for name, _ in compute.named()}
    for round_index in range(warmup + iters):
        dist.barrier()
        stamps.clear()
        f, b, _, start = compute.step(batch, clock, sync=False)
        if round_index >= warmup:
            forward.append(f)
            backward.append(b)
            for name, mark in stamps.items():
                ready[name].append(clock.seconds(start, mark))
        for name, trainer in trainers.items():
            dist.barrier()
            _, _, total, _ = trainer.step(batch, clock, sync=True)
            if round_index >= warmup:
                totals[name].append(total)
        for sample in samplers:
            sample()
    for handle in hooks:
        handle.remove()
    # One all-reduce MAX of every rank's medians: forward, backward, ready times, methods.
    names = list(ready)
    medians = [statistics.median(v) for v in (forward, backward, *ready.values())]
    reduced = max_over_ranks(medians + [statistics.median(totals[m]) for m in methods], device)
    fwd, bwd, ready_s = reduced[0], reduced[1], reduced[2 : 2 + len(names)]
    sizes = {name: p.numel() * p.element_size() for name, p in compute.named()}
    gradients = sorted(
        (Gradient(n, float(sizes[n]), min(t, bwd)) for n, t in zip(names, ready_s, strict=True)),
        key=lambda g: g.ready_s,
    )
    return dict(zip(methods, reduced[2 + len(names) :], strict=True)), fwd, bwd, gradients


class ExchangeCompute:
    """Step 4 as a sampler: each call times every compressor's exchange of every gradient of
    the MLP on a group of one rank (its own compressor, so training's state is left alone)."""

    def __init__(
        self, methods: Sequence[str], widths: Sequence[int], batch_size: int, device: torch.device
    ) -> None:
        self.clock, self.device = Clock(device), device
        self.compressors = {
            COMPRESSORS[m][2]: get(COMPRESSORS[m][0], **COMPRESSORS[m][1])
            for m in methods
            if m in COMPRESSORS
        }
        # Every rank joins in creating the one-rank groups, as dist.new_subgroups requires.
        self.alone = dist.new_subgroups(group_size=1)[0] if self.compressors else None
        model = build_mlp(widths, device)
        inputs, targets = synthetic_batch(widths, batch_size, dist.get_rank(), device)
        torch.nn.functional.mse_loss(model(inputs), targets).backward()
        self.grads = [(name, p.grad) for name, p in model.named_parameters()]
        self.samples: dict[str, dict[str, list[float]]] = {
            spec: {name: [] for name, _ in self.grads} for spec in self.compressors
        }

    def __call__(self) -> None:
        for spec, compressor in self.compressors.items():
            for name, grad in self.grads:
                work = grad.clone()
                start = self.clock.mark()
                allreduce_compressed(work, compressor, self.alone, name=name)
                end = self.clock.mark()
                self.clock.sync()
                self.samples[spec][name].append(self.clock.seconds(start, end))

    def result(self, skip: int) -> dict[str, dict[str, float]]:
        """spec -> tensor -> seconds: the median after ``skip`` calls, max over ranks."""
        keys = [(spec, name) for spec, by_name in self.samples.items() for name in by_name]
        medians = [statistics.median(self.samples[s][n][skip:]) for s, n in keys]
        out: dict[str, dict[str, float]] = {spec: {} for spec in self.samples}
        for (spec, name), value in zip(keys, max_over_ranks(medians, self.device), strict=True):
            out[spec][name] = value
        return out


class ReferenceRing:
    """A sampler timing reference_impls' ring all-reduce (the collective the compressors' hooks
    run, as rings of isend/irecv) once per size per call: barrier, call, max over ranks."""

    def __init__(self, sizes: Sequence[int], device: torch.device) -> None:
        self.clock, self.device = Clock(device), device
        p = dist.get_world_size()
        self.buffers = [torch.ones(max(n // (4 * p), 1) * p, device=device) for n in sizes]
        self.samples: list[list[float]] = []

    def __call__(self) -> None:
        times = []
        for buffer in self.buffers:
            buffer.fill_(1.0)  # sums of sums would overflow in a long run
            dist.barrier()
            start = self.clock.mark()
            ring_allreduce(buffer)
            end = self.clock.mark()
            self.clock.sync()
            times.append(self.clock.seconds(start, end))
        self.samples.append(max_over_ranks(times, self.device))

    def measurements(self, skip: int) -> list[Measurement]:
        """One Measurement per size: the median over the calls after ``skip``."""
        p = dist.get_world_size()
        return [
            Measurement(collective="all-reduce", world_size=p, bytes=float(buffer.numel() * 4),
                        seconds=max(statistics.median(s[i] for s in self.samples[skip:]), 1e-9))
            for i, buffer in enumerate(self.buffers)
        ]  # fmt: skip


class QuickCalibration:
    """A sampler for ``measure_training``: one timed all-reduce per size per round
    (commatlas.measure.collectives.measure), fitted on the median over the rounds after the
    warm-up, so the link is timed under the same load as the training."""

    def __init__(self, sizes: Sequence[int], device: torch.device) -> None:
        self.sizes, self.device = sizes, device
        self.rounds: list[list[Measurement]] = []

    def __call__(self) -> None:
        self.rounds.append(measure(["all-reduce"], self.sizes, 0, 1, self.device, progress=False))

    def profile(self, skip: int) -> tuple[ClusterProfile, dict[str, str]]:
        """``fit_profile`` of the medians after ``skip`` rounds (and what it could not fit)."""
        kept = self.rounds[skip:]
        rows = [
            first.model_copy(update={"seconds": statistics.median(r[i].seconds for r in kept)})
            for i, first in enumerate(kept[0])
        ]
        return fit_profile(rows, "check-ddp quick calibration", "commatlas check-ddp")
