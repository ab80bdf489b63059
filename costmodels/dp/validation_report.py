"""Summaries of a validation (costmodels.dp.validation): MAPE by group and the best-method check.

The best-method check asks what a user of the calculator asks: at the largest GPU count the data
has for a model, does the method the model predicts fastest match the one measured fastest? Two
answers are given: ``exact`` (the same method; methods that run the same schedule with the same
costs are predicted alike and count as one) and ``within_noise`` (the predicted winner's
measured throughput is within two standard deviations of the difference of the two runs' means,
sqrt(std_best^2 + std_pick^2), of the measured winner's: the runs cannot tell them apart).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from costmodels.dp.validation import Checked

TIE = 1e-9  # relative: predictions closer than this come from the same numbers


def mape_by(checked: Iterable[Checked], key: Callable[[Checked], str]) -> dict[str, float]:
    """MAPE (%) of the rows not used for the fit, per value of ``key`` (e.g. method, model)."""
    groups: dict[str, list[float]] = {}
    for c in checked:
        if not c.used_for_fit:
            groups.setdefault(key(c), []).append(abs(c.error))
    return {name: 100 * float(np.mean(errors)) for name, errors in groups.items()}


@dataclass(frozen=True)
class BestMethod:
    """The fastest method of one model at its largest GPU count, measured and predicted."""

    dnn: str
    network: str
    gpus: int
    measured_best: str
    predicted_best: str
    measured_gap: float  # measured throughput of measured_best minus that of predicted_best
    noise: float  # 2 sqrt(std_best^2 + std_pick^2), samples/s
    exact: bool  # the predicted best (or one of the methods tied with it) is the measured best

    @property
    def within_noise(self) -> bool:
        return self.exact or self.measured_gap <= self.noise

    def as_json(self) -> dict[str, object]:
        return {
            "dnn": self.dnn, "network": self.network, "gpus": self.gpus,
            "measured_best": self.measured_best, "predicted_best": self.predicted_best,
            "exact": self.exact, "within_noise": self.within_noise,
            "measured_gap": self.measured_gap, "noise": self.noise,
        }  # fmt: skip


def best_methods(checked: Iterable[Checked]) -> list[BestMethod]:
    """One :class:`BestMethod` per (model, network), every method of the data competing."""
    groups: dict[tuple[str, str], list[Checked]] = {}
    for c in checked:
        groups.setdefault((c.row.dnn, c.row.network), []).append(c)
    result = []
    for (dnn, network), group in groups.items():
        gpus = max(c.row.gpus for c in group)
        at_scale = [c for c in group if c.row.gpus == gpus]
        measured = max(at_scale, key=lambda c: c.row.measured)
        top = max(c.predicted for c in at_scale)
        # Methods the model predicts alike (the same schedule and costs) tie; the one measured
        # fastest among them is the pick, and the label names them all.
        tied = [c for c in at_scale if c.predicted >= top * (1 - TIE)]
        predicted = max(tied, key=lambda c: c.row.measured)
        label = " = ".join([predicted.row.method] + sorted(
            c.row.method for c in tied if c is not predicted))  # fmt: skip
        noise = 2 * math.hypot(measured.row.measured_std, predicted.row.measured_std)
        gap = measured.row.measured - predicted.row.measured
        result.append(BestMethod(dnn, network, gpus, measured.row.method, label, gap, noise,
                                 predicted.row.method == measured.row.method))  # fmt: skip
    return result
