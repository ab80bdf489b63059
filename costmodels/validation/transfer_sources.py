"""The dev sources of the measured-step transfer (issue 37), read through the validation corpus.

One reader per dev file serves both the corpus (issue 36's leave-one-source-out) and the
one-step transfer: each run here is the corpus row (costmodels/validation/corpus.py) as a
MeasuredRun with the recipe the corpus gives it, so both see the same assumptions (llm-foundry:
MPT's fused loss, no dropout, Composer's reduce dtype, the Triton flash kernel; dgxc: ZeRO-1,
TP communication overlap, Nemotron-4 340B at VP 12; each stated in costmodels/validation/
llmfoundry.py and dgxc.py). Three sources:

- torchtitan async-TP on H100 96 GB at 500 W (costmodels.calibration.torchtitan_dev, which
  reads the same dev rows as the corpus through costmodels.llm.dev_runs);
- llm-foundry MPT with Composer + PyTorch FSDP (corpus source ``llmfoundry``);
- NVIDIA DGX Cloud recipes, NeMo / Megatron-Core on DGX H100 (corpus source ``dgxc``); rows the
  step model cannot price are left out and counted.

A source's runs are grouped by what a measured step's systematic error belongs to: the same
model on the same GPU and framework (llm-foundry: model and GPU; the others: the model). The
step model's error is nearly constant inside such a group and differs between groups by far
more, so a step calibrates its group, not another model. ``one_step_transfers`` takes each run
of a group as the one measured step and predicts every other run of that group (other sizes,
precisions, GPU counts and layouts).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from costmodels.calibration.measured_run import MeasuredRun
from costmodels.llm.shapes import LLMCluster
from costmodels.validation.corpus import CorpusRow, load_corpus


@dataclass(frozen=True)
class SourceRun:
    """One dev row: its group inside the source, the run, and the cluster it ran on."""

    group: str
    run: MeasuredRun
    cluster: LLMCluster


def as_measured_run(row: CorpusRow) -> MeasuredRun:
    """A corpus row as a measured step (its precision, framework and recipe kept)."""
    return MeasuredRun(row.shape, row.layout, row.options["precision"], row.options["framework"],
                       row.measured_s, row.label, recipe=row.options.get("recipe"))  # fmt: skip


def _priced(row: CorpusRow) -> bool:
    from costmodels.calibration.step_transfer import run_time

    try:
        run_time(as_measured_run(row), row.cluster, None)
    except (ValueError, ZeroDivisionError):
        return False
    return True


@cache
def corpus_runs(source: str) -> tuple[tuple[SourceRun, ...], int]:
    """(the rows of corpus ``source`` the step model prices, grouped; how many it cannot)."""
    def group(row: CorpusRow) -> str:
        model = row.tags.get("model") or row.label.split()[0]
        return f"{model} {row.tags['gpu']}" if source == "llmfoundry" else model

    rows = load_corpus((source,))
    kept = [r for r in rows if _priced(r)]
    return tuple(SourceRun(group(r), as_measured_run(r), r.cluster) for r in kept), \
        len(rows) - len(kept)  # fmt: skip


def torchtitan_source() -> tuple[SourceRun, ...]:
    from costmodels.calibration.torchtitan_dev import read_torchtitan_rows, torchtitan_cluster

    cluster = torchtitan_cluster()
    return tuple(SourceRun(row.model, row.run, cluster) for row in read_torchtitan_rows())


SOURCES: dict[str, Callable[[], tuple[SourceRun, ...]]] = {
    "torchtitan async-TP": torchtitan_source,
    "llm-foundry MPT FSDP": lambda: corpus_runs("llmfoundry")[0],
    "dgxc Megatron H100": lambda: corpus_runs("dgxc")[0],
}


def one_step_transfers(
    runs: tuple[SourceRun, ...], fit: Callable[[MeasuredRun, LLMCluster], object],
    references: int | None = None,
) -> list[float]:  # fmt: skip
    """Per reference run: the mean |predicted / measured - 1| over the other runs of its group
    after calibrating on it with ``fit(run, cluster) -> TransferFit``. ``references``: every
    k-th run only (evenly spread), to bound the work on large sources."""
    from costmodels.calibration.step_transfer import run_time

    step = 1 if not references else max(1, math.ceil(len(runs) / references))
    out = []
    for ref in runs[::step]:
        others = [s for s in runs if s.group == ref.group and s is not ref]
        if not others:
            continue
        try:
            done = fit(ref.run, ref.cluster)
        except ValueError:
            continue
        errors = [abs(run_time(s.run, s.cluster, done.calibration, done.network_scale)
                      / s.run.seconds - 1) for s in others]  # fmt: skip
        out.append(statistics.mean(errors))
    return out
