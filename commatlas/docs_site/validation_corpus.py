"""The Validation page's issue-36 section: the whole validation corpus, per source and per
regime, with the leave-one-source-out error beside the error with the shipped constants.

Computed at build time by costmodels.validation.report (the code of ``commatlas validate-llm``),
so no number is typed in. Only dev data appears.
"""

from __future__ import annotations

import math

SOURCE_NAMES = {
    "vtrain": "vTrain single-node (A100, Megatron-DeepSpeed)",
    "narayanan": "Narayanan et al. SC'21 Table 1 (A100, Megatron-LM)",
    "korthikanti": "Korthikanti et al. 2022 (A100, Megatron-LM)",
    "torchtitan": "torchtitan (H100 / H200, FSDP2 x TP, compiled)",
    "nanotron": "Ultra-Scale Playbook TP scaling (H100, nanotron)",
    "llmfoundry": "llm-foundry MPT (A100 / H100, Composer + PyTorch FSDP)",
    "dgxc": "DGX Cloud recipes (H100, NeMo / Megatron-Core)",
}


def _pct(value: float | None) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:.1f}%"


def _row(name: str, s: dict) -> str:
    return (f"| {name} | {s['rows']} | {_pct(s['mape_pct'])} | {_pct(s['loso_mape_pct'])} | "
            f"{_pct(s['inside_band_pct'])} | {s['does_not_fit']} | {s['may_not_fit']} |")


HEAD = ["| | Runs | Error, shipped constants | Error, source held out (LOSO) | Inside band | "
        "Judged not to fit | May not fit |", "|---|---|---|---|---|---|---|"]  # fmt: skip


def corpus_section() -> list[str]:
    from costmodels.validation.report import validation_report

    report = validation_report()
    lines = [
        "## Every dev training run, held out by source",
        "",
        "One loader (`costmodels/validation/corpus.py`) reads every dev training set into one "
        "table with regime tags. *Shipped constants* is the mean |predicted / measured - 1| "
        "of the step time with the constants as shipped (fitted with every source); *LOSO* "
        "refits every fitted constant without the source being predicted "
        "(`python benchmarks/llm_loso.py`), the number that says how the model does on runs "
        "it never saw. *Inside band*: the share of runs whose error is inside their "
        "`expected_error_pct`. Every one of these runs trained, so every *judged not to fit* "
        "is a miss of the memory model; *may not fit* is within 5% above the usable memory. "
        "`commatlas validate-llm` prints the same tables.",
        "",
        *HEAD,
        *(_row(SOURCE_NAMES.get(s, s), v) for s, v in report["per_source"].items()),
        _row("**all**", report["all"]),
        "",
    ]
    for tag, groups in report["per_regime"].items():
        lines += [f"**Per {tag}**", "", *HEAD,
                  *(_row(value or "—", s) for value, s in groups.items()), ""]  # fmt: skip
    return lines
