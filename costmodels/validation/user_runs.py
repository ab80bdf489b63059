"""A user's own measured runs as corpus rows: the same table, tags and report as the dev sets.

The runs come from the ``--measured FILE`` CSV of the LLM commands (costmodels/calibration/
measured_csv.py: ``step_s`` and any layout key per row), read with the model, precision and
framework they default to; each becomes a CorpusRow of source ``user`` with the regime tags of
costmodels/validation/corpus.py, so ``costmodels.validation.report.validation_report(rows=...)``
prints their error per regime beside the dev data.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from costmodels.calibration.measured_csv import read_measured_steps
from costmodels.calibration.measured_run import MeasuredRun
from costmodels.llm.shapes import LLMCluster, TransformerShape
from costmodels.validation.corpus import CorpusRow, make_row

SOURCE = "user"


def user_rows(runs: Sequence[MeasuredRun], cluster: LLMCluster) -> list[CorpusRow]:
    """Each measured run on ``cluster`` as a corpus row of source ``user``."""
    return [make_row(SOURCE, f"{r.label} {i + 1}", r.shape, r.layout, cluster, r.options,
                     r.seconds) for i, r in enumerate(runs)]  # fmt: skip


def read_user_rows(path: str | Path, cluster: LLMCluster, *, shape: TransformerShape,
                   global_batch: int, precision: str = "bf16",
                   framework: str = "megatron") -> list[CorpusRow]:  # fmt: skip
    """The rows of a ``--measured`` CSV (errors name the file, line and column)."""
    runs = read_measured_steps(path, shape=shape, global_batch=global_batch,
                               precision=precision, framework=framework,
                               gpus_per_node=cluster.gpus_per_node)  # fmt: skip
    return user_rows(runs, cluster)
