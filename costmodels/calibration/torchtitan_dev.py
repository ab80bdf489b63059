"""The torchtitan async-TP dev rows as measured runs (data/torchtitan-asynctp-h100-dev.csv).

The rows are read once, by costmodels.llm.dev_runs (the step model's dev data): Llama 3.1 8B on
64 and 70B on 256 H100 96 GB at 500 W (Grand Teton), FSDP x TP 8, torch.compile, bf16 / float8
tensorwise / float8 rowwise, vanilla and async TP; what each row assumes (sequence 8192, one
micro-batch of the local batch, per-op or full checkpointing, sequence parallelism) is written
there. Here each becomes a MeasuredRun for the measured-step transfer (step_transfer.py), with
its fp8 recipe and TP schedule (costmodels.llm.recipe), so a step measured with one precision
or TP schedule calibrates the others.

Step time = tokens per GPU per step / tokens/s per GPU = local batch x 8192 / tp / tps.
``one_step_transfers`` is issue 28's target on these rows: each row as the one measured step,
every other row of the same model predicted (benchmarks/step_transfer.py, the trace-calibration
guide, the Validation page and tests/costmodels/test_step_transfer.py read it).
"""

from __future__ import annotations

from dataclasses import dataclass

from costmodels.calibration.measured_run import MeasuredRun
from costmodels.calibration.transfer_prior import TransferPrior
from costmodels.llm.dev_runs import DevRun, dev_runs
from costmodels.llm.shapes import LLMCluster


@dataclass(frozen=True)
class TorchtitanRow:
    model: str  # llama3-8b | llama3-70b, as the file names it
    quantization: str  # bf16 | float8_tensorwise | float8_rowwise
    async_tp: bool
    tokens_per_s_per_gpu: float
    run: MeasuredRun


def _torchtitan_runs() -> list[DevRun]:
    return [run for run in dev_runs() if run.family == "torchtitan"]


def torchtitan_cluster() -> LLMCluster:
    """Grand Teton H100 96 GB at 500 W, 400 Gb/s RDMA per GPU (costmodels.llm.dev_runs)."""
    return _torchtitan_runs()[0].cluster


def read_torchtitan_rows() -> list[TorchtitanRow]:
    """Every measured number of the dev file: 2 models x 3 quantizations x vanilla/async TP."""
    rows = []
    for dev in _torchtitan_runs():
        model, quantization, schedule = dev.label.split()[:3]
        tokens = dev.layout.micro_batch * dev.shape.seq_len / dev.layout.tp
        run = MeasuredRun(dev.shape, dev.layout, dev.options["precision"],
                          dev.options["framework"], dev.measured_s, dev.label,
                          recipe=dev.options.get("recipe"))  # fmt: skip
        rows.append(TorchtitanRow(model, quantization, schedule == "async",
                                  tokens / dev.measured_s, run))  # fmt: skip
    return rows


@dataclass(frozen=True)
class Transfer:
    """One measured torchtitan row -> another row of the same model (step_transfer.py)."""

    measured: TorchtitanRow
    target: TorchtitanRow
    weight: float  # the share of the measured error that carried (transfer_prior.py)
    factor: str
    scale: float  # the applied factor
    predicted_s: float

    @property
    def error(self) -> float:
        return self.predicted_s / self.target.run.seconds - 1


def one_step_transfers(test: bool = True, prior: TransferPrior | None = None) -> list[Transfer]:
    """Every row as the one measured step, predicting every other row of its model (60)."""
    from costmodels.calibration.step_transfer import fit_one_step, run_time

    cluster = torchtitan_cluster()
    rows = read_torchtitan_rows()
    out = []
    for ref in rows:
        fit = fit_one_step(ref.run, cluster, test=test, prior=prior)
        scale = fit.calibration.gemm_scale  # one factor on every compute part
        for row in rows:
            if row is not ref and row.model == ref.model:
                predicted = run_time(row.run, cluster, fit.calibration, fit.network_scale)
                out.append(Transfer(ref, row, fit.weight, fit.factor, scale, predicted))
    return out
