"""The torchtitan async-TP dev rows as measured runs (data/torchtitan-asynctp-h100-dev.csv).

Source: pytorch/torchtitan benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md (see
costmodels/data/README.md). What each row ran, as the source states it: Llama 3 8B on 64 H100
(FSDP 8 x TP 8, per-op selective activation checkpointing, local batch 12) and 70B on 256 H100
(FSDP 32 x TP 8, full activation checkpointing, local batch 16), torch.compile, bf16 or float8
with tensorwise or rowwise scaling, vanilla or async TP. Assumed here (not in the table):

- sequence 8192 (the seq_len of torchtitan's llama3 8B/70B train configs at its commit 820504e);
- layout: tp 8, dp = FSDP degree with ZeRO-3 (FSDP2 shards parameters, gradients and optimizer
  states), sequence parallelism on (torchtitan's TP plan shards the norms' sequence), one
  micro-batch of the local batch (no gradient accumulation); per-op SAC as ``selective``;
- GPU: the H100 SXM preset with the source's 96 GB and 2.4 TB/s HBM2e (the 500 W power limit
  is not modelled: a calibration absorbs it); 400 Gb/s = 50 GB/s per GPU between nodes;
- framework ``pytorch-compile``; precision ``bf16`` or ``fp8`` (tensorwise). Float8 *rowwise*
  and async TP have no counterpart in the step model (``expressible`` False): the rowwise rows
  are slowed by a known issue (the source's note, torchtitan#1207) and async TP overlaps the TP
  collectives in a way the step model does not describe.

Step time = tokens per GPU per step / tokens/s per GPU = local batch x 8192 / tp / tps.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, replace
from pathlib import Path

from costmodels.calibration.measured_run import MeasuredRun
from costmodels.hardware import get_gpu
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.presets import preset_shape
from costmodels.llm.shapes import Layout, LLMCluster

DATA = Path(__file__).resolve().parents[1] / "data" / "torchtitan-asynctp-h100-dev.csv"
SEQ = 8192
PRECISION = {"bf16": "bf16", "float8_tensorwise": "fp8", "float8_rowwise": "fp8"}
RECOMPUTE = {"full": "full", "per_op_SAC": "selective"}


@dataclass(frozen=True)
class TorchtitanRow:
    model: str
    quantization: str
    async_tp: bool
    tokens_per_s_per_gpu: float
    run: MeasuredRun

    @property
    def expressible(self) -> bool:
        """Whether the step model has this run's precision and TP schedule."""
        return self.quantization != "float8_rowwise" and not self.async_tp


def torchtitan_cluster() -> LLMCluster:
    """Grand Teton H100 (module docstring)."""
    gpu = replace(get_gpu("h100"), name="H100 SXM", memory_gib=96, memory_bandwidth_Bps=2.4e12)
    link = gpu_intra_link(get_gpu("h100"))
    return LLMCluster(gpu, 8, link.bandwidth_Bps, 50e9, intra_latency_s=link.latency_s)


def read_torchtitan_rows(path: Path = DATA) -> list[TorchtitanRow]:
    """Every measured number of the dev file: 2 models x 3 quantizations x vanilla/async TP."""
    lines = [
        line
        for line in path.read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#")
    ]
    rows = []
    for record in csv.DictReader(lines):
        tp, dp, local = int(record["tp"]), int(record["fsdp"]), int(record["local_batch"])
        shape = preset_shape(record["model"].replace("llama3", "llama-3.1"), SEQ)
        layout = Layout(
            tp=tp,
            pp=1,
            dp=dp,
            global_batch=local * dp,
            micro_batch=local,
            zero=3,
            recompute=RECOMPUTE[record["act_ckpt"]],
            sequence_parallel=True,
        )
        tokens = local * SEQ / tp  # per GPU per step
        for column, is_async in (("vanilla_tp_tps", False), ("async_tp_tps", True)):
            tps = float(record[column])
            run = MeasuredRun(
                shape,
                layout,
                PRECISION[record["quantization"]],
                "pytorch-compile",
                tokens / tps,
                f"{record['model']} {record['quantization']} "
                f"{'async' if is_async else 'vanilla'} TP",
            )
            rows.append(TorchtitanRow(record["model"], record["quantization"], is_async, tps, run))
    return rows
