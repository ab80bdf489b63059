"""Error bands from held-out residuals of the combination of mechanisms a prediction rests on.

``benchmarks/llm_loso.py --write`` stores, for every dev training run of the validation corpus
(costmodels/validation/corpus.py), its source, the mechanisms it exercises
(error_bands.mechanisms) and its leave-one-source-out error: |predicted / measured - 1| with
every fitted constant refitted without the run's source (costmodels/data/llm-loso-bands.json).

A prediction's band (``combination_band``) is the 90th percentile of those held-out errors over
the dev runs with exactly its combination of mechanisms, when there are at least ``MIN_ROWS`` of
them. With fewer, the band is taken from the most similar runs (Jaccard similarity of the
mechanism sets, every run tied at the cut-off included, at least ``MIN_ROWS`` runs) and widened
by ``FEW_ROWS_FACTOR``, and the prediction is flagged: a combination no dev run exercised (FSDP
with eager kernels on Hopper, say) does not inherit the narrow band of its best-covered part.
``rows`` says how many dev runs share the exact combination (``expected_error_rows``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

LOSO_BANDS = Path(__file__).resolve().parents[1] / "data" / "llm-loso-bands.json"
MIN_ROWS = 10
FEW_ROWS_FACTOR = 1.5  # stated widening when fewer than MIN_ROWS runs share the combination
QUANTILE = 0.9
# a mechanism no dev run of the pool exercises: UNVALIDATED_FACTOR x the widened 90th
# percentile of every held-out error of the pool (the planner ranks by the band's slow end)
UNVALIDATED_FACTOR = 2.0


@dataclass(frozen=True)
class DevResidual:
    source: str
    mechanisms: frozenset[str]
    abs_error_pct: float  # leave-one-source-out |predicted / measured - 1| in percent


@dataclass(frozen=True)
class Band:
    pct: float
    rows: int  # dev runs with exactly this combination of mechanisms
    basis: int  # dev runs the band was taken from
    few_rows: bool  # rows < MIN_ROWS: widened by FEW_ROWS_FACTOR and flagged


def quantile(values: list[float], q: float = QUANTILE) -> float:
    """The ceil(q n)-th smallest value (a band that holds q of ``values``)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


@cache
def load_residuals(path: Path = LOSO_BANDS) -> tuple[DevResidual, ...]:
    """The shipped held-out residuals (empty when the file is absent)."""
    if not path.exists():
        return ()
    rows = json.loads(path.read_text())["rows"]
    return tuple(DevResidual(r["source"], frozenset(r["mechanisms"]), float(r["abs_error_pct"]))
                 for r in rows)  # fmt: skip


def combination_band(mechanisms: tuple[str, ...] | frozenset[str],
                     residuals: tuple[DevResidual, ...] | None = None,
                     exclude_source: str | None = None) -> Band | None:  # fmt: skip
    """The band of a combination (module docstring); None without residuals. ``exclude_source``
    leaves one source's runs out (the coverage check of benchmarks/llm_loso.py)."""
    pool = [r for r in (load_residuals() if residuals is None else residuals)
            if r.source != exclude_source]  # fmt: skip
    if not pool:
        return None
    wanted = frozenset(mechanisms)
    exact = [r.abs_error_pct for r in pool if r.mechanisms == wanted]
    if len(exact) >= MIN_ROWS:
        return Band(quantile(exact), len(exact), len(exact), False)
    scored = sorted(((len(wanted & r.mechanisms) / len(wanted | r.mechanisms), r.abs_error_pct)
                     for r in pool), reverse=True)  # fmt: skip
    cut = scored[min(MIN_ROWS, len(scored)) - 1][0]
    basis = [err for sim, err in scored if sim >= cut]
    return Band(FEW_ROWS_FACTOR * quantile(basis), len(exact), len(basis), True)


@dataclass(frozen=True)
class HeldOutBand(Band):
    unvalidated: tuple[str, ...] = ()  # mechanisms no run of the pool exercises


def held_out_band(mechanisms: tuple[str, ...] | frozenset[str],
                  residuals: tuple[DevResidual, ...] | None = None,
                  exclude_source: str | None = None) -> HeldOutBand | None:  # fmt: skip
    """The band a prediction gets (``expected_error_pct``), from the pool of held-out residuals
    less ``exclude_source``: a mechanism no run of the pool exercises gives the unvalidated band
    (UNVALIDATED_FACTOR x FEW_ROWS_FACTOR x the pool's 90th percentile, flagged); otherwise the
    combination's band. With ``exclude_source`` set to a dev run's own source this is the band
    that run would have got had its source never been seen: benchmarks/llm_loso.py counts how
    many runs fall inside it (the honest coverage)."""
    pool = tuple(r for r in (load_residuals() if residuals is None else residuals)
                 if r.source != exclude_source)  # fmt: skip
    band = combination_band(mechanisms, pool)
    if band is None:
        return None
    covered = frozenset().union(*(r.mechanisms for r in pool))
    missing = tuple(name for name in mechanisms if name not in covered)
    if missing:
        widest = FEW_ROWS_FACTOR * quantile([r.abs_error_pct for r in pool])
        return HeldOutBand(UNVALIDATED_FACTOR * widest, band.rows, len(pool), True, missing)
    return HeldOutBand(band.pct, band.rows, band.basis, band.few_rows)
