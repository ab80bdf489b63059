"""Error of the shipped step model per source and per regime of the validation corpus.

``validation_report`` predicts every corpus row (costmodels/validation/corpus.py) with the
shipped constants and sets beside each its leave-one-source-out error, as
``benchmarks/llm_loso.py --write`` stored it (costmodels/data/llm-loso-bands.json: every fitted
constant refitted without the row's source), and the memory verdict (every dev run ran, so
"does not fit" is a miss). ``commatlas validate-llm`` and the calculator's Validation page print
it; the numbers are means of |predicted / measured - 1| in percent. Coverage of the held-out
errors, two ways (combination_bands.held_out_band): inside the band built from every source's
held-out errors, and inside the band built without the run's own source (what a run from a
source never seen gets: the honest one).
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from costmodels.llm.combination_bands import LOSO_BANDS, held_out_band, load_residuals
from costmodels.validation.corpus import SOURCES, CorpusRow, load_corpus
from costmodels.validation.loso import predict

REGIME_TAGS = ("generation", "framework", "precision", "moe", "scale", "seq", "recompute")


@dataclass(frozen=True)
class CheckedRow:
    source: str
    label: str
    tags: dict[str, str]
    measured_s: float
    predicted_s: float
    loso_error_pct: float | None  # held-out |error| from llm-loso-bands.json (None: not stored)
    loso_predicted_s: float | None  # the held-out prediction itself (None: not stored)
    # the held-out error inside the band built from every source's held-out errors / built
    # without this run's source (combination_bands.held_out_band; None: not stored)
    loso_in_band: bool | None
    loso_in_held_band: bool | None
    memory_verdict: str
    expected_error_pct: float

    @property
    def error_pct(self) -> float:
        return 100 * (self.predicted_s / self.measured_s - 1)


def _loso_errors() -> dict[tuple[str, str], tuple[float, float | None, bool, bool]]:
    """{(source, label): (held-out |error| %, held-out predicted step or None, inside the band
    built from every source, inside the band built without the run's source)}."""
    if not LOSO_BANDS.exists():
        return {}
    residuals = load_residuals()
    out = {}
    for r in json.loads(LOSO_BANDS.read_text())["rows"]:
        err, mechs = float(r["abs_error_pct"]), frozenset(r["mechanisms"])
        band = held_out_band(mechs, residuals)
        held = held_out_band(mechs, residuals, exclude_source=r["source"])
        out[(r["source"], r["label"])] = (err, r.get("loso_predicted_s"),
                                          band is not None and err <= band.pct,
                                          held is not None and err <= held.pct)  # fmt: skip
    return out


def check_rows(rows: Sequence[CorpusRow]) -> list[CheckedRow]:
    """Every row predicted with the shipped constants, with its stored held-out error."""
    held = _loso_errors()
    out = []
    for r in rows:
        step = predict(r)
        loso = held.get((r.source, r.label), (None, None, None, None))
        out.append(CheckedRow(r.source, r.label, r.tags, r.measured_s, step.iteration_time_s,
                              *loso, step.memory_verdict, step.expected_error_pct))  # fmt: skip
    return out


def _share(flags: list[bool | None]) -> float | None:
    known = [f for f in flags if f is not None]
    return 100 * statistics.fmean(known) if known else None


def summarize(rows: Sequence[CheckedRow]) -> dict[str, float | int | None]:
    """rows, mape_pct (shipped constants), loso_mape_pct, inside_band_pct, memory misses."""
    held = [r.loso_error_pct for r in rows if r.loso_error_pct is not None]
    return {
        "rows": len(rows),
        "mape_pct": statistics.fmean(abs(r.error_pct) for r in rows) if rows else None,
        "loso_mape_pct": statistics.fmean(held) if held else None,
        "inside_band_pct": 100 * statistics.fmean(abs(r.error_pct) <= r.expected_error_pct
                                                  for r in rows) if rows else None,
        "loso_in_band_pct": _share([r.loso_in_band for r in rows]),
        "loso_in_held_band_pct": _share([r.loso_in_held_band for r in rows]),
        "does_not_fit": sum(r.memory_verdict == "does not fit" for r in rows),
        "may_not_fit": sum(r.memory_verdict == "may not fit" for r in rows),
    }  # fmt: skip


def validation_report(sources: Sequence[str] = SOURCES,
                      rows: Sequence[CorpusRow] | None = None) -> dict:  # fmt: skip
    """{rows, per_source, per_regime: {tag: {value: summary}}, all} (module docstring)."""
    checked = check_rows(load_corpus(tuple(sources)) if rows is None else rows)
    per_source = {s: summarize([r for r in checked if r.source == s])
                  for s in dict.fromkeys(r.source for r in checked)}  # fmt: skip
    per_regime = {tag: {value: summarize([r for r in checked if r.tags.get(tag) == value])
                        for value in sorted({r.tags.get(tag, "") for r in checked})}
                  for tag in REGIME_TAGS}  # fmt: skip
    return {"rows": [{**asdict(r), "error_pct": r.error_pct} for r in checked],
            "per_source": per_source, "per_regime": per_regime, "all": summarize(checked)}


def format_summary(name: str, s: dict) -> str:
    """One printed line of a summary."""
    def num(v: float | None) -> str:
        return f"{v:8.1f}" if v is not None and not math.isnan(v) else f"{'-':>8}"

    return (f"{name:<22}{s['rows']:>6}{num(s['mape_pct'])}{num(s['loso_mape_pct'])}"
            f"{num(s['inside_band_pct'])}{num(s['loso_in_band_pct'])}"
            f"{num(s['loso_in_held_band_pct'])}{s['does_not_fit']:>8}{s['may_not_fit']:>8}")


HEADER = (f"{'':<22}{'rows':>6}{'MAPE %':>8}{'LOSO %':>8}{'in band':>8}{'LOSO in':>8}"
          f"{'held in':>8}{'no-fit':>8}{'maybe':>8}")
