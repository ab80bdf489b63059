"""llm-foundry's MPT benchmark tables as measured runs (costmodels/data/
llmfoundry-mpt-fsdp-dev.csv).

Source: mosaicml/llm-foundry scripts/train/benchmarking/README.md (the file's first line names
the commit): MPT 125M-70B trained with Composer + PyTorch FSDP on A100 40/80 GB and H100, 8-512
GPUs, 12 steps per run; tokens/s per GPU. Dev data (issue 36): every row ran.

How a row becomes a step (nothing is tuned per row):

- shape: the file's n_layers, d_model, n_heads, GELU MLP of ``expansion_ratio`` x d_model, vocab
  50,368, tied embeddings (MPT yamls); the learned position embeddings (seq x d_model) are left
  out of the parameter count (under 0.5 % of every model but the 125M at 65k);
- layout: FSDP only (tp = pp = 1, dp = n_gpus); FULL_SHARD = ZeRO-3, SHARD_GRAD_OP = ZeRO-2;
  ``activation_checkpointing`` True = full recomputation of every block; the global batch is
  micro_batch x grad_accum x n_gpus (the README notes rows whose stated global batch does not
  divide; the step time is computed from the same product, so it stays consistent);
- kernels: ``pytorch`` (Composer runs eager PyTorch; MPT uses flash attention); FSDP mixed
  precision DEFAULT reduces gradients in fp32, PURE in bf16 (Composer's FSDP presets);
  ``amp_fp8`` runs Transformer Engine's delayed-scaling fp8 linears; MPT's default loss is the
  in-place fused cross-entropy and its benchmark configs train without dropout (recipe
  ``fused_loss`` and ``dropout``, costmodels/llm/recipe.py); attention is MPT's
  ``attn_impl: triton`` (the Triton port of FlashAttention-1: the MPT yamls and
  scripts/train/benchmarking/submit_benchmarks.py's ``--attn_impl`` default were ``triton`` at
  every commit that wrote these tables, b2a43a14 and 5e85bd62, and sweep.sh never overrides it;
  ``flash`` became the default in March 2024, c26309de), priced at its published rate
  (recipe ``attention_kernel``, costmodels/llm/attention_rates.py). The README's MFU counts
  attention as 12 n_layers d_model seq^2 FLOPs per sequence (no causal halving): we use only its
  tokens/s, so that choice does not enter the step time;
- cluster: 8 GPUs per node (the file says not stated; MosaicML nodes); A100 tables: 1,600 Gbit/s
  RoCE per node = 200 Gbit/s per GPU (stated); H100: not stated, 400 Gbit/s per GPU ASSUMED
  (the usual 8 x 400 Gbit/s H100 node).

Step time = micro_batch x grad_accum x seq_len / (tokens/s per GPU).
"""

from __future__ import annotations

import csv
from pathlib import Path

from costmodels.hardware import get_gpu
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.recipe import TrainingRecipe
from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape

DATA = Path(__file__).resolve().parents[1] / "data" / "llmfoundry-mpt-fsdp-dev.csv"
SOURCE = "llmfoundry"
GPUS = {"a100_40gb": "A100 40GB SXM", "a100_80gb": "A100 80GB SXM", "h100_80gb": "H100 SXM"}
INTER_BPS = {"a100_40gb": 200e9 / 8, "a100_80gb": 200e9 / 8, "h100_80gb": 400e9 / 8}
GPUS_PER_NODE = 8


def read_rows(path: Path = DATA) -> list[dict[str, str]]:
    """The data rows of a commented CSV (lines starting with '#' are provenance)."""
    with path.open() as handle:
        return list(csv.DictReader(line for line in handle if not line.startswith("#")))


def cluster_for(gpu_key: str) -> LLMCluster:
    gpu = get_gpu(GPUS[gpu_key])
    link = gpu_intra_link(gpu)
    return LLMCluster(gpu, GPUS_PER_NODE, link.bandwidth_Bps, INTER_BPS[gpu_key],
                      intra_latency_s=link.latency_s)  # fmt: skip


def llmfoundry_runs(path: Path = DATA) -> list[dict]:
    """Every row as {label, shape, layout, cluster, options, measured_s, tags} (module doc)."""
    out = []
    for r in read_rows(path):
        seq, gpus = int(r["seq_len"]), int(r["n_gpus"])
        micro, accum = int(r["micro_batch"]), int(r["grad_accum"])
        d = int(r["d_model"])
        shape = TransformerShape(int(r["n_layers"]), d, int(r["n_heads"]), seq,
                                 ffn=int(r["expansion_ratio"]) * d,
                                 vocab=int(r["vocab"]))  # fmt: skip
        ckpt = r["activation_checkpointing"] == "True"
        layout = Layout(tp=1, pp=1, dp=gpus, global_batch=micro * accum * gpus, micro_batch=micro,
                        zero=3 if r["sharding_strategy"] == "FULL_SHARD" else 2,
                        recompute="full" if ckpt else "none")  # fmt: skip
        fp8 = r["precision"] == "amp_fp8"
        pure = r["fsdp_mixed_precision"] == "PURE"
        recipe = TrainingRecipe(reduce_dtype="bf16" if pure else "fp32",
                                fp8_recipe="delayed" if fp8 else None,
                                fused_loss=True, dropout=False,
                                attention_kernel="triton")  # fmt: skip
        options = {"precision": "fp8" if fp8 else "bf16", "framework": "pytorch",
                   "recipe": recipe}  # fmt: skip
        label = (f"{r['model']} {r['gpu']} {r['precision']} seq {seq} x{gpus} "
                 f"{r['sharding_strategy']}{' ckpt' if ckpt else ''} mb {micro}")  # fmt: skip
        tags = {"fsdp_mixed_precision": r["fsdp_mixed_precision"],
                "sharding": r["sharding_strategy"]}  # fmt: skip
        out.append({"label": label, "shape": shape, "layout": layout,
                    "cluster": cluster_for(r["gpu"]), "options": options,
                    "measured_s": micro * accum * seq / float(r["tok_per_s_per_gpu"]),
                    "tags": tags})  # fmt: skip
    return out
