"""``plan-llm``'s output: one row per layout, fastest (by the slow end of its band) first, then
the lines that say what the table assumes; and why no layout was found (both moved out of
commatlas/llm_commands.py)."""

from __future__ import annotations

import argparse
from typing import Any

from costmodels.llm.memory_margin import limit_note


def print_plan_table(rows: list[dict[str, Any]], echo: dict[str, Any]) -> None:
    """The ranked layouts as a table, then what they assume: model, GPU, how they are ranked,
    the memory-limit mark (issue 42) and what a calibration fitted."""
    print(f"{'rank':>4s} {'tp':>3s} {'pp':>3s} {'dp':>5s} {'cp':>3s} {'ep':>3s} {'mb':>3s} "
          f"{'v':>2s} {'zero':>4s} {'sp':>3s} {'recompute':>9s} {'iter s':>9s} "
          f"{'mem GiB':>8s} {'MFU %':>6s} {'± %':>5s}")  # fmt: skip
    for i, row in enumerate(rows, 1):
        lay = row["layout"]
        print(
            f"{i:4d} {lay['tp']:3d} {lay['pp']:3d} {lay['dp']:5d} {lay['cp']:3d} {lay['ep']:3d} "
            f"{lay['micro_batch']:3d} {lay['interleave']:2d} {lay['zero']:4d} "
            f"{'yes' if lay['sequence_parallel'] else 'no':>3s} {lay['recompute']:>9s} "
            f"{row['iteration_time_s']:9.4g} {row['memory_per_gpu_bytes'] / 2**30:8.2f} "
            f"{row['mfu_pct']:6.1f} {row['expected_error_pct']:5.0f}"
            + (" AT THE MEMORY LIMIT;" if row.get("at_memory_limit") else "")
            + (" unvalidated: " + ", ".join(row["unvalidated_mechanisms"])
               if row["unvalidated_mechanisms"] else "")
        )  # fmt: skip
    print(f"# {echo['model']}; {echo['gpu']['name']} {echo['precision']}, {echo['framework']}; "
          f"intra-node: {echo['cluster']['intra_source']}")  # fmt: skip
    print(
        "# ranked by the slow end of each layout's expected error band (iteration time x "
        "(1 + ± %)); ± % comes from the dev validation sets of its regime; MFU % of the dense "
        "BF16 peak (mfu_native_pct in --json: of the precision's own)"
    )
    limited = [i for i, row in enumerate(rows, 1) if row.get("at_memory_limit")]
    if limited:
        first = rows[limited[0] - 1]
        roomy = next((i for i in range(1, len(rows) + 1) if i not in limited), None)
        print(f"# rank {', '.join(map(str, limited))} "
              f"{limit_note(first['memory_per_gpu_bytes'], first['usable_memory_bytes'])}; "
              + (f"the fastest with room to spare is rank {roomy}" if roomy
                 else "raise --top to see layouts with room to spare"))  # fmt: skip
    if echo["calibration"]:
        cal = echo["calibration"]
        print(f"# calibrated ({cal['source']}): fitted {', '.join(cal['fitted']) or 'nothing'}")
        for row in cal.get("outliers", []):
            print(f"# outlier {row['row']}: {row['why']}")


def why_no_plan(args: argparse.Namespace, shape: Any, cluster: Any, options: dict,
                choices: dict[str, Any]) -> str:
    """Why plan-llm found nothing: the split (costmodels.llm.plan_diagnosis) or memory."""
    from costmodels.llm.plan_diagnosis import why_no_layout
    from costmodels.llm.planner import bounded_layouts
    from costmodels.llm.step import predict_step

    valid = bounded_layouts(shape, args.gpus, cluster, args.global_batch, **choices)
    if not valid:
        return why_no_layout(shape, args.gpus, cluster, args.global_batch, **choices)
    # priced again only on this failure path: plan() keeps the fitting layouts alone
    need, leanest = min(
        ((predict_step(shape, lay, cluster, **options).memory_per_gpu_bytes, lay) for lay in valid),
        key=lambda pair: pair[0],
    )
    return (
        f"none of the {len(valid):,} valid layouts of {args.gpus:,} GPUs fits in memory: the "
        f"leanest (TP {leanest.tp} x PP {leanest.pp} x DP {leanest.dp}, ZeRO {leanest.zero}, "
        f"recompute {leanest.recompute}) needs {need / 2**30:,.1f} GiB per GPU on the "
        f"{cluster.gpu.name} ({cluster.gpu.memory_gib} GiB); use more GPUs"
        + ("" if 3 in choices["zero_stages"] else ", or search ZeRO 3 (--zero-stages 0,1,2,3)")
        + ("" if "full" in choices["recompute"] else ", or full recompute (--recompute-modes full)")
    )
