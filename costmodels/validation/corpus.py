"""One validation corpus: every dev training measurement, read through one loader into one table.

Sources (all dev data; costmodels/data/README.md names the files; nothing kept for independent
checks is read):

- ``vtrain``: 720 single-node A100 Megatron-DeepSpeed runs (costmodels/llm/vtrain_data.py);
- ``narayanan``: Narayanan et al. SC'21 Table 1, 32-3,072 A100 (costmodels/llm/megatron_table.py);
- ``korthikanti``, ``torchtitan`` (the H100 async-TP rows and the H200 FSDP rows of the same
  file), ``nanotron``: costmodels/llm/dev_runs.py;
- ``llmfoundry``: MPT with Composer + PyTorch FSDP on A100 / H100 (llmfoundry.py here);
- ``dgxc``: NeMo / Megatron-Core on DGX H100 (dgxc.py here).

Each ``CorpusRow`` carries what ``predict_step`` needs, the measured step time and its regime
tags (``regime_tags``): GPU and generation, framework, precision and fp8 recipe, the parallel
mechanisms, dense / MoE and scale. A user's own runs enter through the same row type
(costmodels/validation/user_runs.py reads them from a CSV).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from costmodels.llm.gpu_arch import gpu_arch
from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape

SOURCES = ("vtrain", "narayanan", "korthikanti", "torchtitan", "nanotron", "llmfoundry", "dgxc")


@dataclass(frozen=True)
class CorpusRow:
    """One measured training run: inputs, measured seconds per step, regime tags."""

    source: str
    label: str
    shape: TransformerShape
    layout: Layout
    cluster: LLMCluster
    options: dict[str, Any] = field(hash=False)  # precision, framework, recipe
    measured_s: float
    tags: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    memory_bytes: float | None = None  # the peak the run reported, where it did
    ran: bool = True  # it trained: its layout fitted in memory

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return self.layout.global_batch * self.shape.seq_len / self.measured_s / self.layout.gpus


def scale_tag(gpus: int, per_node: int) -> str:
    if gpus <= per_node:
        return "1-node"
    if gpus <= 64:
        return "2-64"
    return "65-512" if gpus <= 512 else ">512"


def regime_tags(shape: TransformerShape, layout: Layout, cluster: LLMCluster,
                options: dict[str, Any]) -> dict[str, str]:  # fmt: skip
    """The regime a run sits in (module docstring), as short string tags."""
    recipe = options.get("recipe")
    precision = options["precision"]
    if precision == "fp8":
        fp8 = recipe.fp8_recipe if recipe is not None and recipe.fp8_recipe else "default"
        precision = f"fp8-{fp8}"
    parallel = [f"{k}{getattr(layout, k)}" for k in ("tp", "pp", "cp", "ep")
                if getattr(layout, k) > 1]  # fmt: skip
    if layout.zero:
        parallel.append(f"zero{layout.zero}")
    return {
        "gpu": cluster.gpu.name,
        "generation": gpu_arch(cluster.gpu.name),
        "framework": options["framework"],
        "precision": precision,
        "parallel": "+".join(parallel) or "dp",
        "moe": "moe" if shape.experts > 1 else "dense",
        "scale": scale_tag(layout.gpus, cluster.gpus_per_node),
        "seq": "<=4k" if shape.seq_len <= 4096 else ("8k" if shape.seq_len <= 8192 else ">8k"),
        "recompute": layout.recompute,
    }


def make_row(source: str, label: str, shape: TransformerShape, layout: Layout,
             cluster: LLMCluster, options: dict[str, Any], measured_s: float,
             extra_tags: dict[str, str] | None = None,
             memory_bytes: float | None = None) -> CorpusRow:  # fmt: skip
    tags = {"source": source, **regime_tags(shape, layout, cluster, options), **(extra_tags or {})}
    return CorpusRow(source, label, shape, layout, cluster, options, measured_s, tags,
                     memory_bytes)  # fmt: skip


def _vtrain() -> list[CorpusRow]:
    from costmodels.llm.vtrain_data import FRAMEWORK, PRECISION, read_vtrain_rows, vtrain_cluster

    cluster = vtrain_cluster()
    options = {"precision": PRECISION, "framework": FRAMEWORK}
    return [make_row("vtrain", f"row {r.row_in_source}", r.shape, r.layout, cluster, options,
                     r.measured_s, {"fit_sample": "yes" if r.row_in_source % 16 == 0 else "no"})
            for r in read_vtrain_rows()]  # fmt: skip


def _narayanan() -> list[CorpusRow]:
    from costmodels.llm.megatron_table import (
        FRAMEWORK,
        PRECISION,
        TABLE_1,
        layout_for,
        measured_iteration_s,
        selene_cluster,
    )

    selene = selene_cluster()
    options = {"precision": PRECISION, "framework": FRAMEWORK}
    return [make_row("narayanan", f"{run.params_billion:g}B", run.shape,
                     layout_for(run, selene), selene, options, measured_iteration_s(run))
            for run in TABLE_1]  # fmt: skip


def _dev_runs() -> list[CorpusRow]:
    from costmodels.llm.dev_runs import dev_runs

    families = {"torchtitan": "torchtitan", "torchtitan-h200": "torchtitan",
                "nanotron": "nanotron", "korthikanti": "korthikanti"}  # fmt: skip
    return [make_row(families[r.family], r.label, r.shape, r.layout, r.cluster, r.options,
                     r.measured_s, {"family": r.family}, r.memory_bytes)
            for r in dev_runs()]  # fmt: skip


def _table(source: str, runs: list[dict]) -> list[CorpusRow]:
    return [make_row(source, r["label"], r["shape"], r["layout"], r["cluster"], r["options"],
                     r["measured_s"], r["tags"]) for r in runs]  # fmt: skip


def _llmfoundry() -> list[CorpusRow]:
    from costmodels.validation.llmfoundry import llmfoundry_runs

    return _table("llmfoundry", llmfoundry_runs())


def _dgxc() -> list[CorpusRow]:
    from costmodels.validation.dgxc import dgxc_runs

    return _table("dgxc", dgxc_runs())


READERS: dict[str, Callable[[], list[CorpusRow]]] = {
    "vtrain": _vtrain, "narayanan": _narayanan, "llmfoundry": _llmfoundry, "dgxc": _dgxc,
}  # fmt: skip


@cache
def load_corpus(sources: tuple[str, ...] = SOURCES) -> tuple[CorpusRow, ...]:
    """Every dev row of ``sources`` (module docstring), in source order."""
    unknown = [s for s in sources if s not in SOURCES]
    if unknown:
        raise ValueError(f"unknown source(s) {', '.join(unknown)}; choose from "
                         f"{', '.join(SOURCES)}")  # fmt: skip
    rows: list[CorpusRow] = []
    dev = [r for r in _dev_runs() if r.source in sources] if set(sources) & {
        "torchtitan", "nanotron", "korthikanti"} else []  # fmt: skip
    for source in sources:
        rows += READERS[source]() if source in READERS else [r for r in dev if r.source == source]
    return tuple(rows)


def select(rows: Iterable[CorpusRow], **tags: str) -> list[CorpusRow]:
    """The rows whose tags equal every given ``tag=value``."""
    return [r for r in rows if all(r.tags.get(k) == v for k, v in tags.items())]
