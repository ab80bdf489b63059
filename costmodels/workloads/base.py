"""The data types of a workload: its gradient tensors, an optional measured profile, and the
gradients an iteration scheduler consumes.

A :class:`Workload` lists every trainable tensor of a model in definition (forward) order, with
the names PyTorch gives them (torchvision / Hugging Face ``named_parameters``), so that measured
ready times in costmodels/data/h200_profile.json can be attached by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import accumulate

from costmodels.gradients import Gradient

PRECISIONS = ("fp32", "bf16")


@dataclass(frozen=True)
class Tensor:
    """One trainable tensor: its PyTorch name and its number of elements."""

    name: str
    numel: int

    def __post_init__(self) -> None:
        if self.numel <= 0:
            raise ValueError(f"tensor {self.name!r}: numel must be positive, got {self.numel}")


@dataclass(frozen=True)
class MeasuredProfile:
    """One measured training step of a model (seconds, from the start of each pass).

    ``ready`` maps a tensor name to the second after the start of backward at which its gradient
    was produced (the ``gradients_in_ready_order`` list of the H200 profile).
    """

    fwd_s: float
    bwd_s: float
    batch_size: int
    ready: dict[str, float]
    device: str
    precision: str = "fp32"


@dataclass(frozen=True)
class Workload:
    """A model as data: its tensors, where the architecture comes from, and measurements if any.

    ``measured`` is the fp32 profile and ``measured_bf16`` the bf16 autocast one (both None for
    models the H200 profile does not cover).
    """

    name: str
    tensors: tuple[Tensor, ...]
    source: str
    measured: MeasuredProfile | None = None
    measured_bf16: MeasuredProfile | None = None
    published: str = ""  # the published total this count is checked against, with its source
    aliases: tuple[str, ...] = field(default=())

    @property
    def params(self) -> int:
        """Total trainable parameters (tied weights counted once, as PyTorch does)."""
        return sum(t.numel for t in self.tensors)

    def profile(self, precision: str = "fp32") -> MeasuredProfile | None:
        """The measured profile for ``precision`` ("fp32" or "bf16"), or None if not measured."""
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        return self.measured if precision == "fp32" else self.measured_bf16

    def gradients(
        self, bytes_per_value: int = 4, backward_s: float | None = None, precision: str = "fp32"
    ) -> list[Gradient]:
        """Every gradient with its size in bytes and ready time, in the order backward makes them.

        With a measured profile for ``precision``, the measured ready times are used as they are
        (``backward_s`` None) or scaled so that the measured backward pass lasts ``backward_s``.
        Without one, ``backward_s`` is required and is spread over the tensors in reverse
        definition order, each tensor taking a share proportional to its parameter count: a
        stand-in for its backward FLOPs, which ignores that convolutions and attention do more
        work per parameter than embeddings or norms.

        ``bytes_per_value`` is the width of the communicated gradient; it is independent of
        ``precision`` because bf16 autocast keeps fp32 parameters, so gradients stay 4 bytes
        unless the caller compresses or casts them.
        """
        if bytes_per_value <= 0:
            raise ValueError(f"bytes_per_value must be positive, got {bytes_per_value}")
        if backward_s is not None and backward_s < 0:
            raise ValueError(f"backward_s must be >= 0, got {backward_s}")
        profile = self.profile(precision)
        if profile is not None:
            return _measured_gradients(self, profile, bytes_per_value, backward_s)
        if backward_s is None:
            raise ValueError(
                f"{self.name} has no measured {precision} profile: pass backward_s to spread the "
                "gradients over the backward pass"
            )
        return _spread_gradients(self, bytes_per_value, backward_s)


def _measured_gradients(
    workload: Workload, profile: MeasuredProfile, bytes_per_value: int, backward_s: float | None
) -> list[Gradient]:
    scale = 1.0 if backward_s is None else backward_s / profile.bwd_s
    sizes = {t.name: t.numel for t in workload.tensors}
    order = sorted(profile.ready, key=lambda name: profile.ready[name])
    return [
        Gradient(name, sizes[name] * bytes_per_value, profile.ready[name] * scale) for name in order
    ]


def _spread_gradients(
    workload: Workload, bytes_per_value: int, backward_s: float
) -> list[Gradient]:
    # Backward visits layers last to first, so the last-defined tensor is ready first; each one
    # is ready once the share of backward_s proportional to all counts up to it has elapsed.
    backward_order = workload.tensors[::-1]
    total = workload.params
    done = accumulate(t.numel for t in backward_order)
    return [
        Gradient(t.name, t.numel * bytes_per_value, backward_s * cum / total)
        for t, cum in zip(backward_order, done, strict=True)
    ]
