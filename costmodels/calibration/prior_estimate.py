"""Estimate the measured-step shrinkage (costmodels/calibration/transfer_prior.py) on dev data.

Every dev row (costmodels.llm.dev_validation.checked_runs: vTrain single-node, Narayanan Table
1, Korthikanti, torchtitan async-TP, torchtitan H200, nanotron; nothing kept for independent
checks) is predicted with the shipped constants and grouped by the model and cluster it ran:
a vTrain model shape, a torchtitan model, a Korthikanti model size, a Narayanan row (each is a
model of its own), the nanotron 3B runs, the H200 runs. Then, with y = log(measured /
predicted):

- ``sigma`` per kernel set: the pooled within-group standard deviation of y (sum of squared
  deviations from each group's mean over the sum of n_g - 1) over the groups that ran that
  kernel set, where they give at least ``MIN_DOF`` degrees of freedom; ``sigma_pooled`` over
  every group;
- ``tau``: the maximum-likelihood spread of the groups' mean errors, each mean distributed
  N(0, tau^2 + sigma_g^2 / n_g) (one-way random effects; the model's mean error is 0 by the
  fit), maximised on a fine grid of tau.

``leave_out`` drops a family, for the held-out check of benchmarks/step_transfer.py.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable

import numpy as np

from costmodels.calibration.transfer_prior import PI_WIDE, TAU_WIDE, TransferPrior

MIN_DOF = 5


def dev_groups(leave_out: Iterable[str] = ()) -> dict[tuple, tuple[str, list[float]]]:
    """{group key: (kernel set, [log(measured / predicted), ...])} over the dev rows."""
    from costmodels.llm.dev_validation import checked_runs
    from costmodels.llm.vtrain_data import read_vtrain_rows

    skip = set(leave_out)
    shape_of = {f"row {r.row_in_source}": r.shape for r in read_vtrain_rows()}
    groups: dict[tuple, tuple[str, list[float]]] = {}
    for run in checked_runs():
        if run.family in skip:
            continue
        kernels = next(m.split(":", 1)[1] for m in run.mechanisms if m.startswith("kernels:"))
        if run.family == "vtrain":
            key: tuple = ("vtrain", shape_of[run.label])
        elif run.family in ("torchtitan", "korthikanti"):
            key = (run.family, run.label.split()[0])
        elif run.family == "narayanan":
            key = (run.family, run.label)
        else:
            key = (run.family,)
        groups.setdefault(key, (kernels, []))[1].append(-math.log1p(run.error))
    return groups


def _within(groups: Iterable[list[float]]) -> tuple[float, int]:
    squares, dof = 0.0, 0
    for ys in groups:
        if len(ys) > 1:
            centre = statistics.fmean(ys)
            squares += sum((y - centre) ** 2 for y in ys)
            dof += len(ys) - 1
    return squares, dof


def estimate_prior(leave_out: Iterable[str] = ()) -> TransferPrior:
    """The shrinkage's constants from the dev groups (module docstring)."""
    groups = dev_groups(leave_out)
    squares, dof = _within(ys for _, ys in groups.values())
    pooled = math.sqrt(squares / dof)
    by_kernels: dict[str, list[list[float]]] = defaultdict(list)
    for kernels, ys in groups.values():
        by_kernels[kernels].append(ys)
    sigma = {}
    for kernels, members in sorted(by_kernels.items()):
        s, d = _within(members)
        if d >= MIN_DOF:
            sigma[kernels] = math.sqrt(s / d)
    means = np.array([statistics.fmean(ys) for _, ys in groups.values()])
    noise = np.array([sigma.get(k, pooled) ** 2 / len(ys) for k, ys in groups.values()])
    taus = np.linspace(0.0, 0.5, 5001)
    var = taus[:, None] ** 2 + noise[None, :]
    loglik = -0.5 * (np.log(var) + means[None, :] ** 2 / var).sum(axis=1)
    tau = float(taus[int(np.argmax(loglik))])
    return TransferPrior(tau, sigma, pooled, PI_WIDE, TAU_WIDE)


def prior_record(prior: TransferPrior) -> dict:
    """The JSON the shipped file holds: the constants and where they came from."""
    groups = dev_groups()
    return {
        "tau": prior.tau,
        "sigma_by_kernels": prior.sigma_by_kernels,
        "sigma_pooled": prior.sigma_pooled,
        "pi_wide": prior.pi_wide,
        "tau_wide": prior.tau_wide,
        "groups": len(groups),
        "rows": sum(len(ys) for _, ys in groups.values()),
        "method": "costmodels/calibration/prior_estimate.py: pooled within-group SD of "
        "log(measured/predicted) per kernel set (>= 5 dof), ML spread of the group means; "
        "pi_wide and tau_wide are stated estimates (transfer_prior.py)",
        "data": "dev only: costmodels.llm.dev_validation.checked_runs (vTrain single-node, "
        "Narayanan Table 1, Korthikanti, torchtitan async-TP, torchtitan H200, nanotron)",
    }
