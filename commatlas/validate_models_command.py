"""``commatlas validate-models``: calibrate on the BSP rows of a measured table, predict the rest.

The work is costmodels.dp.validation (what each row ran, the BSP-only calibration) and
costmodels.dp.validation_report (MAPE by method and model, the best-method check); this module
parses the flags and prints. ``--json`` prints one object: rows, mape, mape_by_method,
mape_by_model, best_method, calibration, mape_all_rows, regret and lodo (leave-one-DNN-out: mape,
mape_by_model, predicted per row, regret; null with fewer than two models) (never NaN or
Infinity). commatlas.validate_models_lodo formats the leave-one-DNN-out part.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from commatlas.cli_types import nonempty
from costmodels.safe_output import json_text

DEFAULT_DATA = Path(__file__).resolve().parents[1] / "costmodels" / "data"


def validate_models_command(args: argparse.Namespace) -> int:
    """Calibrate on the BSP rows of ``--data``, predict the others; MAPE and best-method check."""
    from commatlas.validate_models_lodo import held_out_checks, summary_json, summary_lines
    from costmodels.dp.validation import read_rows, validate
    from costmodels.dp.validation_report import best_methods, mape_by

    try:
        measured = read_rows(Path(args.data))
        calibrations, checked, mape = validate(measured)
        held_out, why_not = held_out_checks(measured)
    except (OSError, ValueError) as exc:  # UnicodeDecodeError and NetworkNameError included
        print(f"commatlas validate-models: {exc}", file=sys.stderr)
        return 2
    rows = [
        {"dnn": c.row.dnn, "method": c.row.method, "network": c.row.network, "gpus": c.row.gpus,
         "measured": c.row.measured, "predicted": c.predicted, "error": c.error,
         "used_for_fit": c.used_for_fit}
        for c in checked
    ]  # fmt: skip
    by_method = mape_by(checked, lambda c: c.row.method)
    by_model = mape_by(checked, lambda c: c.row.dnn)
    best = best_methods(checked)
    if args.json:
        fits = [vars(c) for c in calibrations]
        print(json_text({
            "rows": rows, "mape": mape, "mape_by_method": by_method, "mape_by_model": by_model,
            "best_method": [b.as_json() for b in best], "calibration": fits,
            **summary_json(checked, held_out),
        }))  # fmt: skip
        return 0
    for cal in calibrations:
        print(
            f"{cal.network} ({cal.architecture}, {cal.rows} BSP rows): inter "
            f"{cal.node_network_Bps / 1e9:.3f} GB/s per node ({1 / cal.beta / 1e9:.3f} per GPU), "
            f"{cal.alpha * 1e6:.1f} us; intra "
            f"{1 / cal.beta_intra / 1e9:.3f} GB/s, {cal.alpha_intra * 1e6:.1f} us"
        )
        plugin = (f", ByteScheduler plugin {cal.plugin_overhead_s * 1e3:.1f} ms per iteration"
                  if cal.architecture == "allreduce" else "")  # fmt: skip
        print(f"  fitted besides: single-node overlap {cal.intra_overlap:g}{plugin}")  # issue 43
        for note in cal.notes:  # a level the rows could not identify (issue 28)
            print(f"  note: {note}")
    print(
        f"{'dnn':10s} {'method':18s} {'gpus':>4s} {'measured':>9s} {'predicted':>9s} {'error':>7s}"
    )
    for r in rows:
        mark = " (fit)" if r["used_for_fit"] else ""
        print(
            f"{r['dnn']:10s} {r['method']:18s} {r['gpus']:4d} {r['measured']:9.1f} "
            f"{r['predicted']:9.1f} {100 * r['error']:+6.1f}%{mark}"
        )
    print("MAPE by method: " + ", ".join(f"{k} {v:.1f}%" for k, v in by_method.items()))
    print("MAPE by model: " + ", ".join(f"{k} {v:.1f}%" for k, v in by_model.items()))
    for b in best:
        verdict = "right" if b.exact else ("within noise" if b.within_noise else "WRONG")
        print(f"best at {b.gpus} GPUs, {b.dnn}: measured {b.measured_best}, "
              f"predicted {b.predicted_best} ({verdict})")  # fmt: skip
    print(f"MAPE over rows not used for the fit: {mape:.1f}%")
    for line in summary_lines(checked, held_out, why_not):  # issue 43
        print(line)
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    val = sub.add_parser("validate-models", help="calibrate on BSP rows, predict measured runs "
                         "(also leaving each model out) and the regret of the pick")  # fmt: skip
    val.add_argument("--data", type=nonempty(),
                     default=str(DEFAULT_DATA / "paper-a-measured-10gbe.csv"),
                     help="measured table (CSV: dnn, method, gpus, measured iteration ms ...; "
                     "default: Shi et al.'s 10GbE runs shipped in costmodels/data)")  # fmt: skip
    val.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object instead of the text (no NaN or Infinity)",
    )
    val.set_defaults(run=validate_models_command)
