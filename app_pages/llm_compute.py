"""The LLM planner's numbers: every valid layout predicted once, cached, as one table.

Layouts come from ``costmodels.llm.planner.bounded_layouts`` (the validity rules of
costmodels.llm.layout_check, Narayanan et al. SC'21 §3) narrowed by the page's search choices,
and every one is priced by ``costmodels.llm.step.predict_step`` with the page's precision,
framework and (optional) calibration, the same call ``planner.plan`` and ``commatlas plan-llm``
make. Unlike ``plan``, layouts that do not fit in memory are kept (marked ``fits = False``) so the
page can show what the memory limit cuts away; the ranking of those that fit is ``plan``'s:
the slow end of the expected error band (iteration time x (1 + expected_error_pct / 100),
costmodels/llm/error_bands.py), then memory, then fewer model-parallel ranks. Every row also
carries its expected error, the mechanisms no validation covers and the memory breakdown.

>>> from costmodels.hardware import get_gpu
>>> frame = layout_table(
...     shape_key(named_shape("Llama 2 7B", 2048)),
...     cluster_key(get_gpu("a100"), 8, 300e9, 25e9, 2e-6, 5e-6), 8, 64, Search((1,), (0, 1),
...     ("full",), (True,), 1))
>>> best = frame.iloc[0]
>>> bool(best["fits"]), int(best["tp"] * best["pp"] * best["dp"])
(True, 8)
"""

from __future__ import annotations

from dataclasses import astuple, dataclass, fields, replace
from typing import Any

import pandas as pd
import streamlit as st

from app_pages.llm_models import named_shape  # noqa: F401  (used by the doctest)
from costmodels.hardware import GPU
from costmodels.llm.planner import TooManyLayouts, bounded_layouts
from costmodels.llm.shapes import LLMCluster, TransformerShape
from costmodels.llm.step import predict_step

MAX_LAYOUTS = 6000  # a few seconds of predict_step before the cache holds them
MEASURED_LABEL = "Measured on layout"


@dataclass(frozen=True)
class Search:
    """The page's narrowing of ``enumerate_layouts`` (hashable, so it can key the cache)."""

    micro_batches: tuple[int, ...]
    zero_stages: tuple[int, ...]
    recompute: tuple[str, ...]
    sequence_parallel: tuple[bool, ...]
    max_interleave: int
    context_parallel: tuple[int, ...] = (1,)
    expert_parallel: tuple[int, ...] = (1,)
    stage_layers: tuple[int, int] = (0, 0)  # plan-llm's --first/--last-stage-layers
    expert_tensor_parallel: tuple[int, ...] = (0,)  # plan-llm's --etp


@dataclass(frozen=True)
class StepOptions:
    """predict_step's keyword arguments (hashable): precision, framework, calibration."""

    precision: str = "bf16"
    framework: str = "megatron"
    calibration: Any = None  # a costmodels.llm.calibrate_step.StepCalibration or None
    recipe: Any = None  # a costmodels.llm.recipe.TrainingRecipe or None (the framework's)

    def kwargs(self) -> dict[str, Any]:
        return {"precision": self.precision, "framework": self.framework,
                "calibration": self.calibration, "recipe": self.recipe}  # fmt: skip


def shape_key(shape: TransformerShape) -> tuple:
    # shallow: a nested LatentAttention (MLA) stays an object, so TransformerShape(*key) holds
    return tuple(getattr(shape, f.name) for f in fields(shape))


def cluster_key(
    gpu: GPU, gpus_per_node: int, intra_Bps: float, inter_Bps: float, intra_s: float,
    inter_s: float, power_cap_w: float | None = None,
) -> tuple:  # fmt: skip
    return (astuple(gpu), gpus_per_node, intra_Bps, inter_Bps, intra_s, inter_s, power_cap_w)


def cluster_of(key: tuple) -> LLMCluster:
    gpu, per_node, intra_bw, inter_bw, intra_lat, inter_lat, *cap = key
    return LLMCluster(GPU(*gpu), per_node, intra_bw, inter_bw, intra_lat, inter_lat,
                      power_cap_w=cap[0] if cap else None)  # fmt: skip


def layouts(shape: TransformerShape, gpus: int, cluster: LLMCluster, batch: int, search: Search):
    """The valid layouts the search allows; TooManyLayouts when they exceed MAX_LAYOUTS."""
    if not search.micro_batches or not search.zero_stages or not search.recompute:
        raise ValueError("Search: choose at least one micro-batch size, ZeRO stage and recompute")
    try:
        return bounded_layouts(
            shape, gpus, cluster, batch, MAX_LAYOUTS,
            micro_batches=search.micro_batches, zero_stages=search.zero_stages,
            recompute=search.recompute, sequence_parallel=search.sequence_parallel,
            context_parallel=search.context_parallel, expert_parallel=search.expert_parallel,
            max_interleave=search.max_interleave, stage_layers=search.stage_layers,
            expert_tensor_parallel=search.expert_tensor_parallel,
        )  # fmt: skip
    except TooManyLayouts as exc:
        raise TooManyLayouts(f"Search: {exc}") from None


def _row(layout: Any, step: Any) -> dict[str, Any]:
    return {
        "tp": layout.tp, "pp": layout.pp, "dp": layout.dp, "cp": layout.cp, "ep": layout.ep,
        "micro_batch": layout.micro_batch, "interleave": layout.interleave, "zero": layout.zero,
        "sequence_parallel": layout.sequence_parallel, "recompute": layout.recompute,
        "micro_batches": layout.micro_batches, "time_s": step.iteration_time_s,
        "memory_GiB": step.memory_per_gpu_bytes / 2**30, "fits": step.fits,
        "bubble": step.bubble_fraction, "mfu": step.model_flops_utilization,
        "tokens_per_s_per_gpu": step.tokens_per_s_per_gpu,
        "tp_comm_s": step.tp_comm_s, "pp_comm_s": step.pp_comm_s, "dp_comm_s": step.dp_comm_s,
        "cp_comm_s": step.cp_comm_s, "ep_comm_s": step.ep_comm_s,
        "exposed_comm_s": step.exposed_comm_s,
        # share of the step the GPU waits on the host (issue 36: a host-bound answer says so)
        "host_share": step.host_idle_share,
        "expected_error_pct": step.expected_error_pct,
        "unvalidated": ", ".join(step.unvalidated_mechanisms),
        "pessimistic_s": step.iteration_time_s * (1 + step.expected_error_pct / 100),
        "usable_GiB": step.usable_memory_bytes / 2**30,
        **{f"mem_{k}_GiB": v / 2**30 for k, v in step.memory_breakdown_bytes.items()},
    }  # fmt: skip


@st.cache_data(max_entries=64, show_spinner="Pricing every layout ...")
def layout_table(
    shape: tuple,
    cluster: tuple,
    gpus: int,
    batch: int,
    search: Search,
    options: StepOptions = StepOptions(),  # noqa: B008  (frozen, so sharing is safe)
) -> pd.DataFrame:
    """One row per layout: the layout, its predicted step, sorted fitting-fastest first."""
    from costmodels.llm.framework_dp import layout_problem

    model = TransformerShape(*shape)
    machine = cluster_of(cluster)
    candidates = list(layouts(model, gpus, machine, batch, search))
    runnable = [lay for lay in candidates if not layout_problem(options.framework, lay)]
    if candidates and not runnable:  # DeepSpeed: data parallelism only, as plan-llm skips
        raise ValueError(layout_problem(options.framework, candidates[0]))
    rows = [_row(layout, predict_step(model, layout, machine, **options.kwargs()))
            for layout in runnable]
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    frame["model_parallel"] = frame["tp"] * frame["pp"]
    # planner.plan's order among the layouts that fit (the slow end of each layout's expected
    # error band first); a stable sort keeps enumeration order on ties
    frame = frame.sort_values(
        ["fits", "pessimistic_s", "memory_GiB", "model_parallel"],
        ascending=[False, True, True, True],
        kind="mergesort",
    )
    return frame.drop(columns="model_parallel").reset_index(drop=True)


def calibrate(
    shape: TransformerShape, cluster: LLMCluster, batch: int, seconds: float, layout_text: str,
    precision: str, framework: str,
) -> tuple[Any, Any, float]:  # fmt: skip
    """(measured Layout, StepCalibration, network scale) from one measured step, fitted as
    ``predict-llm --measured-step`` does (costmodels.calibration.step_transfer: the layout text
    also takes framework=, precision=, global_batch=, seq=, model=); ValueError naming the
    input."""
    from costmodels.calibration.measured_run import measured_run
    from costmodels.calibration.step_transfer import fit_one_step

    run = measured_run(layout_text, seconds, shape=shape, global_batch=batch,
                       precision=precision, framework=framework,
                       gpus_per_node=cluster.gpus_per_node, label=MEASURED_LABEL,
                       seconds_label="Measured step")  # fmt: skip
    fit = fit_one_step(run, cluster)
    calibration = replace(fit.calibration, source=f"{fit.calibration.source}; {fit.reason}")
    return run.layout, calibration, fit.network_scale


def layout_label(row: pd.Series) -> str:
    """'TP 8 x PP 4 x DP 2, mb 1, v 2, ZeRO-1, SP, full recompute'."""
    parts = [f"TP {row.tp} x PP {row.pp} x DP {row.dp}"]
    if row.cp > 1:
        parts[0] += f" x CP {row.cp}"
    if row.ep > 1:
        parts.append(f"EP {row.ep}")
    parts.append(f"mb {row.micro_batch}")
    if row.interleave > 1:
        parts.append(f"v {row.interleave}")
    if row.zero:
        parts.append(f"ZeRO-{row.zero}")
    if row.sequence_parallel:
        parts.append("SP")
    parts.append("no recompute" if row.recompute == "none" else f"{row.recompute} recompute")
    return ", ".join(parts)
