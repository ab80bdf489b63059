"""How far off a prediction is expected to be: an error band from the validation sets that cover
its regime, and the mechanisms no validation covers.

A prediction rests on mechanisms (``mechanisms``): the kernel set, the GPU generation, the
precision and fp8 recipe, the ZeRO stage, pipeline / interleaving, tensor parallelism inside or
across nodes, sequence, context and expert parallelism, MLA, the recomputation mode, async TP, a
power cap, more than one node. Each dev family (costmodels/llm/dev_runs.py: vTrain single-node,
Narayanan Table 1, Korthikanti Table 5, torchtitan async-TP, torchtitan H200 FSDP, nanotron TP
scaling) exercises a set of them. ``benchmarks/llm_step_accuracy.py --write-bands`` predicts every
dev row and stores, per mechanism, the 90th percentile of |predicted / measured - 1| over the
rows that use it (costmodels/data/llm-error-bands.json, with the rows' provenance).

Since issue 36 a prediction's ``expected_error_pct`` is the band of its *combination* of
mechanisms from leave-one-source-out residuals (costmodels/llm/combination_bands.py,
``expected_error_detail``), with ``expected_error_rows`` dev runs behind it; the per-mechanism
bands below remain the fallback when that file is absent. Per mechanism, the band is the widest
band among its mechanisms. A mechanism no
dev row uses is listed in ``unvalidated_mechanisms`` and widens the band to
``UNVALIDATED_FACTOR`` x the widest band of any mechanism (the planner ranks by the pessimistic
end of the band, so such layouts are flagged and pay for it rather than silently winning).
Only dev data enters the bands; the data kept for independent checks is not read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from costmodels.llm.combination_bands import UNVALIDATED_FACTOR, held_out_band
from costmodels.llm.gpu_arch import gpu_arch

if TYPE_CHECKING:
    from costmodels.llm.recipe import TrainingRecipe
    from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape

BANDS = Path(__file__).resolve().parents[1] / "data" / "llm-error-bands.json"
HOST_BOUND_SHARE = 0.1  # a step whose GPU idles this share or more waiting for launches
FALLBACK_BAND_PCT = 50.0  # when no band file is shipped (before the first --write-bands)


@lru_cache(maxsize=4096)
def mechanisms(
    shape: TransformerShape,
    layout: Layout,
    cluster: LLMCluster,
    precision: str,
    framework: str,
    recipe: TrainingRecipe | None = None,
    host_bound: bool = False,
) -> tuple[str, ...]:
    """The mechanisms a prediction rests on (module docstring), as short names; ``host_bound``:
    the GPU idles HOST_BOUND_SHARE or more of the step waiting for kernel launches."""
    from costmodels.llm.fp8_recipes import default_recipe

    out = [f"kernels:{framework}", f"gpu:{gpu_arch(cluster.gpu.name)}"]
    if precision == "fp8":
        name = recipe.fp8_recipe if recipe and recipe.fp8_recipe else default_recipe(framework)
        out.append(f"fp8:{name}")
    else:
        out.append(f"precision:{precision}")
    out.append(f"zero:{layout.zero}")
    if layout.zero == 3 and layout.dp_shard and layout.dp_shard < layout.dp * layout.cp:
        out.append("hsdp")
    if layout.pp > 1:
        out.append("pipeline")
    if layout.interleave > 1:
        out.append("interleaved")
    if layout.tp > 1:
        out.append("tp-across-nodes" if layout.tp > cluster.gpus_per_node else "tp")
    if layout.sequence_parallel:
        out.append("sequence-parallel")
    if layout.cp > 1:
        out.append("context-parallel")
    if shape.experts > 1:
        out.append("moe")
    if layout.ep > 1:
        out.append("expert-parallel")
    if shape.mla is not None:
        out.append("mla")
    if shape.mamba is not None:  # issue 39: no dev run has Mamba-2 layers (unvalidated)
        out.append("mamba2")
    out.append(f"recompute:{layout.recompute}")
    if recipe is not None and recipe.async_tp and layout.tp > 1:
        out.append("async-tp")
    if cluster.power_cap_w is not None:
        out.append("power-cap")
    if layout.gpus > cluster.gpus_per_node:
        out.append("multi-node")
    if host_bound:
        out.append("host-bound")
    return tuple(out)


@cache
def load_bands(path: Path = BANDS) -> dict[str, float]:
    """{mechanism: band in percent} from the shipped file (empty when absent)."""
    if not path.exists():
        return {}
    record = json.loads(path.read_text())
    return {name: float(entry["p90_abs_error_pct"]) for name, entry in record["bands"].items()}


@dataclass(frozen=True)
class ExpectedError:
    pct: float
    unvalidated: tuple[str, ...]  # mechanisms no dev run exercises
    rows: int  # dev runs with exactly this combination of mechanisms (0: per-mechanism bands)
    few_rows: bool  # fewer than combination_bands.MIN_ROWS: the band is widened and flagged


def expected_error_detail(
    shape: TransformerShape,
    layout: Layout,
    cluster: LLMCluster,
    precision: str,
    framework: str,
    recipe: TrainingRecipe | None = None,
    host_bound: bool = False,
) -> ExpectedError:
    """The combination band (costmodels/llm/combination_bands.py) when the held-out residuals
    are shipped; else the per-mechanism band of ``expected_error``. A combination shared by
    fewer than MIN_ROWS dev runs is flagged ``few_rows`` (its band is widened); a mechanism no
    dev run exercises gives every such layout one band, UNVALIDATED_FACTOR x the widened 90th
    percentile of all held-out errors, and is listed in ``unvalidated``."""
    used = mechanisms(shape, layout, cluster, precision, framework, recipe, host_bound)
    band = held_out_band(used)
    if band is None:
        pct, missing = expected_error(shape, layout, cluster, precision, framework, recipe)
        return ExpectedError(pct, missing, 0, False)
    return ExpectedError(band.pct, band.unvalidated, band.rows, band.few_rows)


def expected_error(
    shape: TransformerShape,
    layout: Layout,
    cluster: LLMCluster,
    precision: str,
    framework: str,
    recipe: TrainingRecipe | None = None,
    bands: dict[str, float] | None = None,
) -> tuple[float, tuple[str, ...]]:
    """(expected error in percent, the mechanisms no validation covers) from the per-mechanism
    bands (llm-error-bands.json): the widest band among the mechanisms used."""
    bands = load_bands() if bands is None else bands
    used = mechanisms(shape, layout, cluster, precision, framework, recipe)
    if not bands:
        return FALLBACK_BAND_PCT, used
    missing = tuple(name for name in used if name not in bands)
    widest = max(bands.values())
    if missing:
        return UNVALIDATED_FACTOR * widest, missing
    return max(bands[name] for name in used), ()
