"""Leave one DNN out: fit on the other models' rows, predict every row of the one left out; and
the regret of the method the model would pick.

The in-sample check (costmodels.dp.validation.validate) fits the links on the BSP rows of every
model and the single-node overlap on the non-BSP rows of every model, then predicts the other
rows of the same models: it cannot tell a mechanism that transfers from constants that absorb one
model's quirks. Here each model in turn is left out: :func:`~costmodels.dp.validation.fit_testbed`
sees only the other models' rows, and every row of the model left out (its BSP rows included) is
predicted with that fit, so no number in its prediction came from its own measurements.

Regret answers the calculator's question ("which method for my model and network?") at every
GPU count, not only the largest: per (model, network, GPU count) the method predicted fastest is
the pick, and its regret is what choosing it costs against the measured best,
1 - measured(pick) / measured(best). Methods predicted alike (the same schedule and costs:
WFBP-PS and ByteScheduler-PS here) tie, and the tie counts as the one measured slowest of them:
the model gave no reason to prefer the better one. ``noise`` puts the regret beside the runs' own
spread (two standard deviations of the difference of the two means, as
costmodels.dp.validation_report does for the best method at the largest scale).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from costmodels.dp.validation import Checked, fit_testbed, predict_rows
from costmodels.dp.validation_rows import ALLREDUCE, Row

TIE = 1e-9  # relative: predictions closer than this come from the same numbers


def leave_one_dnn_out(rows: list[Row], allreduce: str = ALLREDUCE) -> list[Checked]:
    """Every row predicted from a fit on the other models' rows (module docstring), in the
    order of ``rows``; ValueError when the data hold fewer than two models."""
    dnns = list(dict.fromkeys(r.dnn for r in rows))
    if len(dnns) < 2:
        raise ValueError(f"leave-one-DNN-out needs rows of 2 or more models, got {len(dnns)}")
    predicted: dict[int, Checked] = {}
    for dnn in dnns:
        train = [r for r in rows if r.dnn != dnn]
        test = [(i, r) for i, r in enumerate(rows) if r.dnn == dnn]
        fits = fit_testbed(train, allreduce)
        missing = {r.network for _, r in test} - {network for network, _ in fits}
        if missing:
            raise ValueError(f"leave-one-DNN-out: without {dnn} no rows calibrate "
                             f"{', '.join(sorted(missing))}")  # fmt: skip
        for (i, _), checked in zip(test, predict_rows([r for _, r in test], fits, allreduce,
                                                      lambda r: False), strict=True):  # fmt: skip
            predicted[i] = checked
    return [predicted[i] for i in range(len(rows))]


def mape(checked: Iterable[Checked], only_held_out: bool = False) -> float:
    """Mean absolute relative error of throughput (%), over every row or the held-out ones."""
    errors = [abs(c.error) for c in checked if not (only_held_out and c.used_for_fit)]
    if not errors:
        raise ValueError("no rows to score")
    return 100 * float(np.mean(errors))


@dataclass(frozen=True)
class Regret:
    """The predicted-best method of one (model, network, GPU count) against the measured best."""

    dnn: str
    network: str
    gpus: int
    measured_best: str
    predicted_best: str  # the pick; tied methods joined by " = "
    regret: float  # 1 - measured(pick) / measured(best), >= 0
    noise: float = 0.0  # 2 sqrt(std_best^2 + std_pick^2) / measured(best): the runs' own spread

    @property
    def within_noise(self) -> bool:
        """The measured gap is within two standard deviations of the difference of the means."""
        return self.regret <= self.noise

    def as_json(self) -> dict[str, object]:
        return {"dnn": self.dnn, "network": self.network, "gpus": self.gpus,
                "measured_best": self.measured_best, "predicted_best": self.predicted_best,
                "regret": self.regret, "noise": self.noise,
                "within_noise": self.within_noise}  # fmt: skip


def regrets(checked: Iterable[Checked]) -> list[Regret]:
    """One :class:`Regret` per (model, network, GPU count) with 2 or more methods, in the order
    the groups first appear."""
    groups: dict[tuple[str, str, int], list[Checked]] = {}
    for c in checked:
        groups.setdefault((c.row.dnn, c.row.network, c.row.gpus), []).append(c)
    result = []
    for (dnn, network, gpus), group in groups.items():
        if len({c.row.method for c in group}) < 2:
            continue
        best = max(group, key=lambda c: c.row.measured)
        top = max(c.predicted for c in group)
        tied = [c for c in group if c.predicted >= top * (1 - TIE)]
        pick = min(tied, key=lambda c: c.row.measured)
        label = " = ".join([pick.row.method] + sorted(c.row.method for c in tied if c is not pick))
        noise = 2 * math.hypot(best.row.measured_std, pick.row.measured_std) / best.row.measured
        regret = max(0.0, 1 - pick.row.measured / best.row.measured)
        result.append(Regret(dnn, network, gpus, best.row.method, label, regret, noise))
    return result
