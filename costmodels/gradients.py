"""The unit of work the iteration schedulers consume: one gradient tensor and when it is ready."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Gradient:
    """A gradient tensor: its name, its size on the wire and when backward produces it.

    ``ready_s`` counts seconds from the start of the backward pass (the layout of the measured
    ``gradients_in_ready_order`` lists in costmodels/data/h200_profile.json).
    """

    name: str
    bytes: float
    ready_s: float

    def __post_init__(self) -> None:
        if self.bytes < 0 or self.ready_s < 0:
            raise ValueError(f"gradient {self.name!r}: bytes and ready_s must be >= 0")
