"""The leave-one-DNN-out and regret part of ``commatlas validate-models`` (issue 43).

The work is costmodels.dp.validation_lodo; this module only turns it into text lines and a JSON
object, beside the in-sample numbers the command already prints.
"""

from __future__ import annotations

from costmodels.dp.validation import Checked, Row
from costmodels.dp.validation_lodo import Regret, leave_one_dnn_out, mape, regrets
from costmodels.dp.validation_report import mape_by
from costmodels.dp.validation_rows import run_of

MAX_LODO_RUNS = 100  # distinct runs refitted once per model (Shi et al.'s table: 84)


def held_out_checks(rows: list[Row]) -> tuple[list[Checked] | None, str | None]:
    """(every row predicted with its model left out of the fit, None) or (None, why not): not
    run above :data:`MAX_LODO_RUNS` distinct runs, whose refits would take minutes."""
    runs = len({run_of(r) for r in rows})
    if runs > MAX_LODO_RUNS:
        return None, (f"{runs} distinct runs; the refits run for at most {MAX_LODO_RUNS} "
                      "(each model left out refits every link)")  # fmt: skip
    try:
        return leave_one_dnn_out(rows), None
    except ValueError as exc:
        return None, str(exc)


def summary_json(in_sample: list[Checked], held_out: list[Checked] | None) -> dict[str, object]:
    """The JSON fields: in-sample MAPE over every row, the leave-one-DNN-out block, regrets."""
    result: dict[str, object] = {
        "mape_all_rows": mape(in_sample),
        "regret": [r.as_json() for r in regrets(in_sample)],
        "lodo": None,
    }
    if held_out is not None:
        result["lodo"] = {
            "mape": mape(held_out),
            "mape_by_model": _by_model(held_out),
            "predicted": [c.predicted for c in held_out],
            "regret": [r.as_json() for r in regrets(held_out)],
        }
    return result


def _regret(r: Regret) -> str:
    """'7.0%', and '(within noise)' when the runs' spread covers the gap."""
    return f"{100 * r.regret:.1f}%" + (" (within noise)" if r.regret > 0 and r.within_noise
                                       else "")  # fmt: skip


def _by_model(checked: list[Checked]) -> dict[str, float]:
    return mape_by(checked, lambda c: c.row.dnn)  # every row counts: none was fitted


def summary_lines(
    in_sample: list[Checked], held_out: list[Checked] | None, why_not: str | None
) -> list[str]:
    """Text: MAPE in-sample and held out, then each (model, GPU count)'s pick and its regret."""
    lines = [f"MAPE in-sample over every row (BSP rows included): {mape(in_sample):.1f}%"]
    if held_out is None:
        lines.append(f"leave-one-DNN-out: not run ({why_not})")
        picks: list[tuple[Regret, Regret | None]] = [(r, None) for r in regrets(in_sample)]
    else:
        by_model = ", ".join(f"{k} {v:.1f}%" for k, v in _by_model(held_out).items())
        lines.append("leave-one-DNN-out (links, overlap and plugin cost fitted on the other "
                     "models; every row of the model left out predicted): MAPE "
                     f"{mape(held_out):.1f}% ({by_model})")  # fmt: skip
        picks = list(zip(regrets(in_sample), regrets(held_out), strict=True))
    lines.append("predicted-best method per model and GPU count, regret = 1 - measured(pick) / "
                 "measured(best), in-sample | leave-one-DNN-out:")  # fmt: skip
    for mine, theirs in picks:
        held = "" if theirs is None else f" | {theirs.predicted_best} {_regret(theirs)}"
        lines.append(f"  {mine.dnn:10s} {mine.gpus:3d} GPUs  best {mine.measured_best:17s} "
                     f"pick {mine.predicted_best} {_regret(mine)}{held}")  # fmt: skip
    worst = max(picks, key=lambda pair: (pair[1] or pair[0]).regret, default=None)
    if worst is not None:
        chosen = worst[1] or worst[0]
        lines.append(f"largest regret{'' if worst[1] is None else ' (held out)'}: "
                     f"{100 * chosen.regret:.1f}% ({chosen.dnn}, {chosen.gpus} GPUs)")  # fmt: skip
    return lines
