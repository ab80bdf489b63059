"""What a self-test check is, and the context it runs in (data, comparisons, gathers).

A check is a :class:`Check`: the method it covers, a one-line description, and a function
``fn(ctx) -> None`` that runs on every rank. It compares through :meth:`CheckContext.compare`
(which records the largest error) and reports a wrong result with :meth:`CheckContext.fail`;
both *record* and return, so every rank keeps issuing the same collectives in the same order
even when only one rank sees a wrong value (raising there would leave its peers waiting for the
timeout). A check raises :class:`Skip` when the world size does not fit (every rank decides
alike), :class:`CheckFailed` for a failure every rank sees alike, and anything else on a bug:
the runner catches it and reports it. Every rank runs the same checks in the same order, each on
a fresh process group, so a check that did lose step cannot desynchronise the next.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.distributed as dist

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


class Skip(Exception):  # noqa: N818 - reads as "raise Skip(...)", like pytest.skip
    """The check does not apply to this world size; the message says what it needs."""


class CheckFailed(AssertionError):
    """A failure that every rank of the check detects alike (so raising keeps them in step)."""


@dataclass(frozen=True)
class Check:
    """One line of the self-test table."""

    #: the method covered: a function name (``ring_allreduce``) or a record id (``qsgd``)
    method: str
    #: what is compared with what, in a few words
    check: str
    #: runs on every rank of the group; raises Skip, CheckFailed or any error
    fn: Callable[[CheckContext], None]


@dataclass
class CheckContext:
    """Everything a check needs: its private group, rank, device, and comparison helpers."""

    group: dist.ProcessGroup
    device: torch.device
    #: testing aid (``--inject-failure``): perturb the first non-empty comparison on every rank
    inject: bool = False
    max_error: float = 0.0
    #: what went wrong on this rank, in order (empty: passed)
    failures: list[str] = field(default_factory=list)
    _injected: bool = field(default=False, repr=False)

    @property
    def rank(self) -> int:
        return dist.get_rank(self.group)

    @property
    def world(self) -> int:
        return dist.get_world_size(self.group)

    @property
    def int_bound(self) -> int:
        """Data of :meth:`small_ints` lie in [-bound, bound]; bound * p <= 256 keeps every
        partial sum an integer that bfloat16 holds exactly (up to p = 256)."""
        return max(1, min(16, 256 // self.world))

    def small_ints(
        self, numel: int, dtype: torch.dtype, salt: int = 0, rank: int | None = None
    ) -> torch.Tensor:
        """Integers in [-int_bound, int_bound], a function of (rank, numel, salt): any sum over
        the ranks is exact in every float dtype, so a correct collective matches
        ``torch.distributed`` bitwise whatever its summation order."""
        rank = self.rank if rank is None else rank
        generator = torch.Generator().manual_seed(1_000 * rank + 7 * numel + salt)
        bound = self.int_bound
        values = torch.randint(-bound, bound + 1, (numel,), generator=generator)
        return values.to(device=self.device, dtype=dtype)

    def sum_tolerance(self, dtype: torch.dtype) -> float:
        """0 while sums of :meth:`small_ints` are exact in ``dtype`` (integers up to 2/eps);
        past that (bfloat16 beyond 256 ranks) summation order matters: p rounding steps."""
        eps = torch.finfo(dtype).eps
        if self.world * self.int_bound <= 2 / eps:
            return 0.0
        return self.world * self.world * self.int_bound * eps

    def normals(self, shape: tuple[int, ...], salt: int = 0) -> torch.Tensor:
        """Standard normal float32 data, different on every rank, reproducible."""
        generator = torch.Generator().manual_seed(99_991 * (self.rank + 1) + salt)
        return torch.randn(shape, generator=generator).to(self.device)

    def gather(self, tensor: torch.Tensor) -> list[torch.Tensor]:
        """Every rank's ``tensor`` (same shape on all ranks) through ``dist.all_gather``."""
        parts = [torch.empty_like(tensor) for _ in range(self.world)]
        if tensor.numel() == 0:  # nothing to move; some backends dislike empty buffers
            return [tensor.clone() for _ in parts]
        dist.all_gather(parts, tensor.contiguous(), group=self.group)
        return parts

    def fail(self, message: str) -> None:
        """Record a wrong result on this rank; the check carries on (see the module docstring)."""
        self.failures.append(message)

    def compare(
        self, got: torch.Tensor, expected: torch.Tensor, tol: float = 0.0, what: str = ""
    ) -> float:
        """Max |got - expected| (in float64); records a failure if above ``tol``."""
        if got.shape != expected.shape or got.dtype != expected.dtype:
            self.fail(
                f"{what}: got {tuple(got.shape)} {got.dtype}, "
                f"expected {tuple(expected.shape)} {expected.dtype}"
            )
            return float("inf")
        got64, expected64 = got.double(), expected.double()
        if self.inject and not self._injected and got.numel():
            got64 = got64 + 1.0  # the testing aid: a wrong answer the comparison must catch
            self._injected = True
        error = (got64 - expected64).abs().max().item() if got.numel() else 0.0
        if error != error:  # NaN
            error = float("inf")
        self.max_error = max(self.max_error, error)
        if error > tol:
            self.fail(f"{what}: max error {error:.3g} > tolerance {tol:.3g}")
        return error

    def same_on_all_ranks(self, tensor: torch.Tensor, what: str = "") -> None:
        """Record a failure unless every rank holds a bitwise-equal ``tensor``."""
        parts = self.gather(tensor)
        differing = [rank for rank, part in enumerate(parts) if not torch.equal(part, parts[0])]
        if differing:
            self.fail(f"{what}: result on ranks {differing} differs from rank 0's")


def sizes(world: int) -> list[int]:
    """Element counts every collective must handle: 0, 1, p-1, not divisible by p, larger."""
    return sorted({0, 1, world - 1, 2 * world + 1, 24})
