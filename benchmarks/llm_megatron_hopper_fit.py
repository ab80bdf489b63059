"""Fit the Megatron-on-Hopper tensor rate on the DGX Cloud dev rows and (with --write) ship it.

    .venv/bin/python benchmarks/llm_megatron_hopper_fit.py [--write]

Method and data: costmodels/validation/megatron_hopper_fit.py. Prints the dgxc fit half, the
held-out half, the Grok-1 MoE rows and llm-foundry's fp8 rows (another stack: must not move)
before (the rate at its class default) and after; --write writes
costmodels/data/llm-megatron-hopper-constants.json (read by costmodels.llm.default_constants).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from costmodels.llm.constants import MEGATRON_HOPPER_DATA  # noqa: E402
from costmodels.safe_output import json_text, write_atomic  # noqa: E402
from costmodels.validation.corpus import load_corpus  # noqa: E402
from costmodels.validation.megatron_hopper_fit import (  # noqa: E402
    fit_megatron_hopper,
    mean_abs_pct,
    unfitted,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    dgxc = load_corpus(("dgxc",))
    result = fit_megatron_hopper(dgxc)
    before = unfitted()
    after = replace(before, **result.constants)
    groups = {
        "dgxc fit half": [dgxc[i] for i in result.fit_rows],
        "dgxc held-out half": [dgxc[i] for i in result.hold_rows],
        "dgxc Grok-1 (MoE)": [r for r in dgxc if "grok" in r.label.lower()],
        "llm-foundry fp8 (unaffected)": [r for r in load_corpus(("llmfoundry",))
                                         if r.options.get("precision") == "fp8"],
    }  # fmt: skip
    print("fitted: " + ", ".join(f"{k} = {v:.4f}" for k, v in result.constants.items()))
    print(f"{'rows':32} {'n':>4} {'before %':>9} {'after %':>9}")
    report = {}
    for name, rows in groups.items():
        pair = (mean_abs_pct(rows, before), mean_abs_pct(rows, after))
        report[name] = {"rows": len(rows), "before_pct": round(pair[0], 2),
                        "after_pct": round(pair[1], 2)}  # fmt: skip
        print(f"{name:32} {len(rows):4d} {pair[0]:9.1f} {pair[1]:9.1f}")
    if args.write:
        record = {
            "constants": result.constants,
            "method": "costmodels/validation/megatron_hopper_fit.py: Levenberg-Marquardt on log "
                      "error over the even-indexed dgxc corpus rows, other constants shipped",
            "data": "../shared/data/dgxc-megatron-h100-dev.csv (dev), via "
                    "costmodels/validation/corpus.py",
            "mean_abs_pct": report,
        }  # fmt: skip
        write_atomic(MEGATRON_HOPPER_DATA, json_text(record, indent=2) + "\n")
        print(f"wrote {MEGATRON_HOPPER_DATA.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
