"""The Validation page's issue-26 sections: every dev family beside the flat baseline, the runs of
the PyTorch-native families, and the error bands predictions carry.

Computed at build time by costmodels.llm.dev_validation (the code of
benchmarks/llm_step_accuracy.py and tests/costmodels/test_llm_dev_targets.py), so no number is
typed in. Only dev data appears; the data kept for independent checks is not read.
"""

from __future__ import annotations

import json
import math

from costmodels.llm.constants import PYTORCH_DATA
from costmodels.llm.dev_validation import (
    checked_runs,
    error_bands,
    family_summaries,
    global_flat_fraction,
)
from costmodels.llm.error_bands import UNVALIDATED_FACTOR

NAMES = {
    "vtrain": "vTrain single-node (A100, Megatron-DeepSpeed)",
    "narayanan": "Narayanan et al. SC'21 Table 1 (A100, Megatron-LM)",
    "korthikanti": "Korthikanti et al. 2022 Table 5 (A100, Megatron-LM)",
    "torchtitan": "torchtitan async-TP benchmark (H100 96GB at 500 W, FSDP2 x TP)",
    "torchtitan-h200": "torchtitan on H200 (FSDP2, float8)",
    "nanotron": "Ultra-Scale Playbook TP scaling (H100, nanotron)",
}


def _pct(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:.1f}%"


def families_section() -> list[str]:
    rows = [f"| {NAMES[f.family]} | {f.rows} | {_pct(f.mape_pct)} | {_pct(f.fit_mape_pct)} | "
            f"{_pct(f.held_out_mape_pct)} | {_pct(f.flat_global_mape_pct)} | "
            f"{f.flat_fraction:.3f} | {_pct(f.flat_mape_pct)} |"
            for f in family_summaries()]  # fmt: skip
    record = json.loads(PYTORCH_DATA.read_text())
    return [
        "## Every dev family, beside a flat-efficiency baseline",
        "",
        "The baseline prices a step as its FLOPs (recomputation included) at one fraction of "
        "the precision's dense peak, with no communication, bubble or memory-bound work "
        "(llm-analysis' model). Its fraction is fitted on the same dev data: one fraction for "
        f"all of it ({global_flat_fraction():.3f} of peak, every family weighted alike), and, "
        "more favourable to it, a fraction fitted on each family alone. The model's "
        "constants: the A100 ones on half the vTrain rows and Narayanan's table; the Hopper / "
        "PyTorch ones on the fit split of the torchtitan and nanotron rows ("
        f"{record['fitted_on']['time'].split(': ')[0]}), the others held out.",
        "",
        "| Family | Rows | Model MAPE | fitted rows | held-out rows | Flat, one fraction | "
        "Family's own fraction | Flat, own fraction |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        "The model beats the flat baseline on every family against one fraction for all the dev "
        "data; a fraction fitted to one family alone is hard to beat where that family runs at "
        "nearly constant efficiency by design (Narayanan's weak-scaling table) or has two "
        "almost identical rows (the H200 runs).",
        "",
        *_runs_table(),
    ]


def _runs_table() -> list[str]:
    lines = ["| Run | Family | Used to fit | Measured (s) | Predicted (s) | Error |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for r in checked_runs():
        if r.family in ("vtrain", "narayanan"):
            continue
        lines.append(
            f"| {r.label} | {r.family} | {'yes' if r.fitted else 'no'} | "
            f"{r.measured_s:.4g} | {r.predicted_s:.4g} | {100 * r.error:+.1f}% |"
        )
    return [*lines, ""]


def bands_section() -> list[str]:
    bands = error_bands()
    widest = max(b["p90_abs_error_pct"] for b in bands.values())
    rows = [f"| `{name}` | {b['rows']} | {b['mape_pct']:.1f}% | {b['p90_abs_error_pct']:.1f}% |"
            for name, b in bands.items()]  # fmt: skip
    return [
        "## Error bands",
        "",
        "Every prediction carries `expected_error_pct` (CLI, JSON, the LLM planner page): the "
        "90th percentile of the leave-one-source-out errors of the dev runs with its "
        "combination of mechanisms (`costmodels/llm/combination_bands.py`), widened and flagged "
        "where fewer than 10 runs share it, and the unvalidated band where a mechanism has no "
        "dev run; the table at the top of this page counts how many held-out errors fall inside "
        "it when it is built without the run's own source. Where no held-out errors are "
        "shipped it falls back to the per-mechanism bands below: the "
        "widest band among the mechanisms it rests on, each band being the 90th percentile of "
        "|predicted / measured - 1| over the dev rows above that use the mechanism. A "
        "mechanism no dev row uses is listed in `unvalidated_mechanisms` and widens the band to "
        f"{UNVALIDATED_FACTOR:g} x the widest one ({UNVALIDATED_FACTOR * widest:.0f}%): "
        "Megatron-Core's own kernels, ZeRO-1/2, HSDP, context and expert parallelism, MLA, "
        "blockwise and delayed fp8, and GPUs other than A100 and Hopper have no dev run. "
        "`plan-llm` ranks layouts by the slow end of their band, so an unproven layout is "
        "flagged and pays for it instead of winning silently.",
        "",
        "| Mechanism | Dev rows | MAPE | Band (p90 of the error) |",
        "|---|---|---|---|",
        *rows,
        "",
    ]


def transfer_section() -> list[str]:
    """Issue 28's one-step target on the torchtitan rows, computed (torchtitan_dev)."""
    from costmodels.calibration.torchtitan_dev import one_step_transfers
    from costmodels.calibration.transfer_prior import load_prior

    prior = load_prior()
    transfers = one_step_transfers()
    errors = [100 * abs(t.error) for t in transfers]
    worst = max(transfers, key=lambda t: abs(t.error))
    return [
        "## One measured step, the other rows of the same model",
        "",
        "Each torchtitan row as the one measured step (`--measured-step`), every other row of "
        "the same model predicted from it (bf16, float8 tensorwise and rowwise, vanilla and "
        "async TP; `costmodels.calibration.torchtitan_dev.one_step_transfers`). The measured "
        "step is reproduced and its compute factor carries in full; the share of the links' "
        "factor that carries is the empirical-Bayes weight of "
        "`costmodels/calibration/transfer_prior.py`, estimated on these dev rows (the model's "
        f"per-layout scatter {prior.sigma('pytorch-compile'):.3f} in log for compiled PyTorch "
        f"kernels, {prior.sigma('megatron-legacy'):.3f} for the vTrain rows' kernels; the "
        f"spread of its bias between the dev models {prior.tau:.3f}). Over "
        f"{len(errors)} transfers: mean {sum(errors) / len(errors):.1f}%, "
        f"{sum(1 for e in errors if e <= 8)} within 8%, worst {100 * worst.error:+.1f}% "
        f"({worst.measured.run.label} -> {worst.target.run.label}). Every figure of "
        "`python benchmarks/step_transfer.py`, with the vTrain ones, is in the guide "
        "[Calibrate from what you measure](guides/trace-calibration.md).",
        "",
    ]
