"""The what-if table: goodput over scale x storage bandwidth x checkpoint interval x mode.

Scale changes the data-parallel degree only (tp, pp and cp stay; a GPU count that is not a
multiple of tp x pp x cp is an error naming it): more GPUs fail more often (M = M_g / GPUs) and,
with ZeRO, each holds a smaller optimizer shard; the job's checkpoint stays the same size. An
interval of None is each row's optimum by the chosen rule. Cost: one prediction per row,
O(scales x storages x intervals x modes).

Example::

    rows = what_if(shape, layout, gpus_per_node=8, bandwidths=bw, gpu_mtbf_s=1.8e8,
                   restart_s=600.0, gpu_counts=[1024, 16384], storage_Bps=[2e11, 2e12],
                   intervals_s=[None, 3600.0])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from costmodels.goodput.checkpoint_size import checkpoint_size
from costmodels.goodput.prediction import predict_goodput
from costmodels.goodput.write_modes import MODES, Bandwidths, Mode, checkpoint_cost
from costmodels.limits import MAX_GPUS, check_items
from costmodels.llm.shapes import Layout, TransformerShape

MAX_ROWS = 4096


def scaled_layout(layout: Layout, gpus: int) -> Layout:
    """``layout`` with the data-parallel degree that makes ``gpus`` GPUs."""
    model_parallel = layout.tp * layout.pp * layout.cp
    if not 1 <= gpus <= MAX_GPUS or gpus % model_parallel:
        raise ValueError(
            f"{gpus} GPUs is not a multiple of tp x pp x cp = {model_parallel} "
            f"(at most {MAX_GPUS:,})"
        )
    dp = gpus // model_parallel
    # Keep one micro-batch per data-parallel rank: the batch does not change a checkpoint.
    return replace(layout, dp=dp, global_batch=dp * layout.micro_batch)


def what_if(
    shape: TransformerShape,
    layout: Layout,
    *,
    gpus_per_node: int,
    bandwidths: Bandwidths,
    gpu_mtbf_s: float,
    restart_s: float,
    gpu_counts: Sequence[int],
    storage_Bps: Sequence[float],
    intervals_s: Sequence[float | None] = (None,),
    modes: Sequence[Mode] = MODES,
    rule: str = "daly",
    precision: str = "mixed",
    balanced: bool = False,
    snapshot_overlap_s: float = 0.0,
) -> list[dict[str, Any]]:
    """One row per combination (module docstring), in the order scale, storage, interval, mode.

    ``snapshot_overlap_s`` (the base layout's forward and backward) is kept for every row."""
    for values, what in ((gpu_counts, "GPU counts"), (storage_Bps, "storage bandwidths"),
                         (intervals_s, "intervals"), (modes, "modes")):  # fmt: skip
        check_items(list(values), what)
    total = len(gpu_counts) * len(storage_Bps) * len(intervals_s) * len(modes)
    if total > MAX_ROWS:
        raise ValueError(f"the what-if table would have {total:,} rows (at most {MAX_ROWS:,})")
    rows = []
    for gpus in gpu_counts:
        size = checkpoint_size(shape, scaled_layout(layout, gpus), gpus_per_node, precision,
                               balanced)  # fmt: skip
        for storage in storage_Bps:
            bw = replace(bandwidths, storage_Bps=storage)
            for interval in intervals_s:
                for mode in modes:
                    # A fixed interval shorter than a mode's background write is no option there.
                    if (
                        interval is not None
                        and interval < checkpoint_cost(size, mode, bw).persist_s
                    ):
                        continue
                    result = predict_goodput(size, mode, bw, gpu_mtbf_s=gpu_mtbf_s,
                                             restart_s=restart_s, rule=rule,
                                             interval_s=interval,
                                             snapshot_overlap_s=snapshot_overlap_s)  # fmt: skip
                    rows.append({
                        "gpus": gpus, "storage_Bps": storage, "mode": mode,
                        "interval_s": result.interval_s, "optimal": interval is None,
                        "checkpoint_write_s": result.checkpoint_write_s,
                        "job_mtbf_s": result.job_mtbf_s,
                        "expected_goodput": result.expected_goodput,
                    })  # fmt: skip
    return rows
