"""The straggler closed forms as registered sympy cost models: BSP and backup workers.

With a shifted-exponential step time X = t_0 + Exp(mean theta) per worker, the order
statistics are exact (Renyi's representation of exponential spacings; B. C. Arnold,
N. Balakrishnan and H. N. Nagaraja, *A First Course in Order Statistics*, SIAM 2008, chapter
4): the slowest of p workers finishes after t_0 + theta H_p on average, and the p-th fastest
of p + k_b after t_0 + theta (H_{p+k_b} - H_{k_b}), where H_m = 1 + 1/2 + ... + 1/m is the m-th
harmonic number (written H_{m}; not the local-SGD period H). Each model adds the communication
of one step, not overlapped with compute:

- ``bsp-ssgd``: the barrier, then one ring all-reduce of the n-byte gradient (as
  ``ring-allreduce``);
- ``sync-backup-workers``: p + k_b workers push to S separate parameter-server shards, which
  keep the first p gradients (J. Chen, X. Pan, R. Monga, S. Bengio, R. Jozefowicz, "Revisiting
  Distributed Synchronous SGD", arXiv:1604.00981), as ``parameter-server``'s ``separate``.

The distributions without closed forms (normal, log-normal, empirical), SSP and local SGD are
computed numerically in :mod:`costmodels.stragglers.strategies` and
:mod:`costmodels.stragglers.ssp`; tests/costmodels/test_stragglers_monte_carlo.py holds all of
them against simulations.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from costmodels.model import CostModel, Variant
from costmodels.stragglers.order_statistics import harmonic
from costmodels.symbols import S, alpha, beta, gamma, k_b, n, p, t_0, theta

# The communication terms of ring-allreduce and of parameter-server's "separate" variant,
# written out again: importing costmodels.formulas from here would be an import cycle (it
# registers this module). tests/costmodels/test_stragglers_models.py holds them equal.
RING_TIME = 2 * (p - 1) * alpha + 2 * (p - 1) / p * n * beta + (p - 1) / p * n * gamma
RING_BYTES = 2 * (p - 1) / p * n


def push_pull_time(workers: sp.Expr) -> sp.Expr:
    """Separate servers: one push and one pull phase, the busiest link max(n, workers n / S)."""
    return 2 * alpha + 2 * sp.Max(n, workers * n / S) * beta + (workers - 1) * n / S * gamma


class harmonic_number(sp.Function):  # noqa: N801 (sympy functions are lower case)
    """H_x as a sympy function: LaTeX H_{x}; numbers from :func:`harmonic` (numpy, pint)."""

    nargs = 1

    def _latex(self, printer: Any, exp: Any = None) -> str:
        text = f"H_{{{printer._print(self.args[0])}}}"
        return f"{text}^{{{exp}}}" if exp else text

    _imp_ = staticmethod(harmonic)


SLOWEST_OF_P = t_0 + theta * harmonic_number(p)
PTH_OF_P_PLUS_K = t_0 + theta * (harmonic_number(p + k_b) - harmonic_number(k_b))
_CHEN = (
    "J. Chen, X. Pan, R. Monga, S. Bengio and R. Jozefowicz, 'Revisiting Distributed "
    "Synchronous SGD', arXiv:1604.00981, 2016 (ICLR 2016 workshop track)"
)
_ORDER_STATISTICS = (
    "B. C. Arnold, N. Balakrishnan and H. N. Nagaraja, 'A First Course in Order Statistics', "
    "SIAM Classics in Applied Mathematics 54, 2008 (exponential spacings)"
)
_STEP = (
    "each worker's compute time per step is t_0 + Exp(mean theta), independent across workers "
    "and steps (mean t_0 + theta, standard deviation theta)"
)

BSP = CostModel(
    id="bsp-ssgd",
    title="Bulk-synchronous SGD with stragglers (slowest of p, then ring all-reduce)",
    variants={
        "ring": Variant(
            time=SLOWEST_OF_P + RING_TIME,
            bytes_sent={"rank": RING_BYTES},
            description="wait for the slowest of p workers, then one ring all-reduce",
            free_at_one_worker=False,  # a lone worker still computes its step
        )
    },
    source=f"{_CHEN} (the synchronous barrier); {_ORDER_STATISTICS}",
    assumptions=(
        _STEP,
        "the all-reduce starts when the slowest worker finishes (no overlap with backward)",
        "the ring all-reduce assumptions hold (full-duplex links, no contention)",
    ),
)

BACKUP_WORKERS = CostModel(
    id="sync-backup-workers",
    title="Synchronous SGD with k_b backup workers (p-th fastest of p + k_b, then push/pull)",
    variants={
        "parameter-server": Variant(
            time=PTH_OF_P_PLUS_K + push_pull_time(p + k_b),
            bytes_sent={"worker": n, "server": (p + k_b) * n / S},
            description="p + k_b workers push to S separate servers, which keep the first p",
            free_at_one_worker=False,
        )
    },
    source=f"{_CHEN}; {_ORDER_STATISTICS}",
    assumptions=(
        _STEP,
        "all p + k_b workers push their gradient (the late k_b are dropped by the servers), so "
        "the busiest link carries max(n, (p + k_b) n / S) per phase",
        "the parameter-server 'separate' assumptions hold (one full-duplex link per machine)",
        "the k_b dropped gradients shrink no batch: p gradients make every step",
    ),
)

MODELS = [BSP, BACKUP_WORKERS]
