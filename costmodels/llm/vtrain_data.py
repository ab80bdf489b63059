"""The vTrain single-node dev rows as (shape, layout, cluster, measured seconds) for the model.

Source: costmodels/data/vtrain-single-node-dev.csv (see costmodels/data/README.md): GPT models
trained with Megatron-DeepSpeed in fp16 on one node of A100 GPUs (vTrain, Bang et al., MICRO
2024). What the CSV does not state and we fix for every row, nothing per row:

- the model: GPT-2 style (LayerNorm, GeLU, dropout, learned positions, tied embeddings),
  ffn = 4h, vocabulary 50,257 (vTrain's ``vocab_size`` default, which its config files keep;
  Megatron pads it to a multiple of 128 t);
- kernels: ``megatron-legacy`` (vTrain's own model replica uses apex fused LayerNorm, the fused
  scale-mask-softmax and bias-GeLU kernels and unfused attention), fp16, full recomputation
  (the ``activation_checkpointing`` column is true for every row), 1F1B;
- micro-batches: the ``micro_batch`` column, also for pp = 1 (gradient accumulation). vTrain's
  simulator config overrides it to the whole local batch when pp = 1, but rows that differ
  only in that column differ in measured time by up to 2x, so the runs used it;
- cluster: ``A100_VARIANT`` on NVLink 3 (300 GB/s per direction, costmodels.hardware.links, at
  its achievable fraction), all GPUs in one node.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from costmodels.hardware import get_gpu, get_link
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape

DATA = Path(__file__).resolve().parents[1] / "data" / "vtrain-single-node-dev.csv"
VOCAB = 50257
A100_VARIANT = "A100 80GB SXM"
FRAMEWORK = "megatron-legacy"
PRECISION = "fp16"


@dataclass(frozen=True)
class VTrainRow:
    row_in_source: int
    shape: TransformerShape
    layout: Layout
    measured_s: float


def vtrain_cluster(gpu_name: str = A100_VARIANT) -> LLMCluster:
    """One 8 x A100 node; the intra-node link is the GPU's default (costmodels.llm.intra_link:
    NCCL's NVLink 3 figure, 240 GB/s per GPU and direction)."""
    gpu = get_gpu(gpu_name)
    link = gpu_intra_link(gpu)
    return LLMCluster(
        gpu=gpu,
        gpus_per_node=8,
        intra_bandwidth_Bps=link.bandwidth_Bps,
        inter_bandwidth_Bps=get_link("hdr").bandwidth_Bps,  # unused: one node
        intra_latency_s=link.latency_s,
    )


def read_vtrain_rows(path: Path = DATA) -> list[VTrainRow]:
    """Every row of the dev file (the even rows of vTrain's single-node ground truth)."""
    with path.open() as handle:
        lines = [line for line in handle if not line.startswith("#")]
    rows = []
    for record in csv.DictReader(lines):
        tp, pp, dp = int(record["tp"]), int(record["pp"]), int(record["dp"])
        batch = int(record["global_batch"])
        micro = int(record["micro_batch"])
        shape = TransformerShape(
            layers=int(record["num_layers"]), hidden=int(record["hidden_size"]),
            heads=int(record["attention_heads"]), seq_len=int(record["seq_len"]), vocab=VOCAB,
        )  # fmt: skip
        layout = Layout(tp=tp, pp=pp, dp=dp, global_batch=batch, micro_batch=micro,
                        recompute="full")  # fmt: skip
        rows.append(VTrainRow(int(record["row_in_source"]), shape, layout,
                              float(record["measured_iter_time_ms"]) / 1e3))  # fmt: skip
    return rows
