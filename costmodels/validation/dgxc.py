"""NVIDIA DGX Cloud benchmarking recipes v25.04 as measured runs (costmodels/data/
dgxc-megatron-h100-dev.csv).

Source: NVIDIA/dgxc-benchmarking v25.04.01 (the file's first line names the commit and files):
NeMo (Megatron-Core + Transformer Engine) on DGX H100 (8 x H100 80GB, 8 x 400 Gbit/s InfiniBand
per node), 8-2,048 GPUs: Llama 3.1 8B/70B/405B, GPT-3 175B, Nemotron-4 15B/340B, Grok-1 314B
MoE, bf16 and fp8 (Transformer Engine delayed scaling), every row's layout and its measured
step time. Dev data (issue 36): every row ran.

How a row becomes a step (nothing is tuned per row):

- shape: the file's columns (reduced-layer proxy rows run the ``layers`` they list); SwiGLU and
  GeGLU are gated MLPs, squared-ReLU and GeLU are not; Llama, Nemotron and Grok untie the
  output embedding, GPT-3 ties it (Megatron's default);
- layout: TP, PP, CP, EP as listed; ``vp`` > 1 runs the interleaved schedule
  (Nemotron-4 340B: VP 12, VP_NOT_LISTED); the data-parallel
  size is n_gpus / (tp pp cp) (Grok-1's ``dp_col`` counts replicas outside EP; EP sits inside the
  data-parallel group, as costmodels.llm.shapes.Layout places it); the global batch is the one
  the throughput implies where the listed one disagrees (GPT-3 175B at 512 GPUs lists 1204);
  the distributed optimizer (ZeRO-1) and sequence parallelism whenever TP > 1 (NeMo's
  Megatron-Core recipes turn both on); no activation recomputation (the tables do not state it;
  the Grok-1 and GPT-3 yamls set ``activations_checkpoint`` null);
- recipe: gradients reduced in bf16 (NeMo 2's ``pretrain_performance_optimizations`` set
  ``recipe.trainer.plugins.grad_reduce_in_fp32 = False``, and its performance scripts do the same
  for fp8, read in NVIDIA/NeMo's recipes and scripts/performance with the search tool); fp8 =
  ``bf16_with_fp8_mixed``: delayed scaling ("hybrid"), fp8 parameters (``fp8_params = True``);
  TP communication overlapped with the GEMMs (the same recipes add ``MegatronCommOverlapCallback(
  tp_comm_overlap=True)``: Transformer Engine's userbuffers split the all-gather / reduce-scatter
  and pipeline them with the GEMM chunks), priced as asynchronous TP (costmodels/llm/async_tp.py);
- cluster: H100 SXM, 8 per node, 400 Gbit/s per GPU.
"""

from __future__ import annotations

from pathlib import Path

from costmodels.hardware import get_gpu
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.recipe import TrainingRecipe
from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape
from costmodels.validation.llmfoundry import read_rows

DATA = Path(__file__).resolve().parents[1] / "data" / "dgxc-megatron-h100-dev.csv"
SOURCE = "dgxc"
GATED = ("swiglu", "geglu")
# The v25.04 tables list no VP for Nemotron-4 340B; the same repository's nemotron/README.md
# config table (another version, read with the search tool) lists VP 12 for the same rows
# (96 layers, TP 8, PP 8, MBS 1, GBS 64-512, GA 16): one layer per virtual stage.
VP_NOT_LISTED = {"nemotron4-340b": 12}
# Grok-1's grok1/configure.sh (same commit) exports NVTE_FUSED_ATTN=0: Transformer Engine then
# runs Tri Dao's flash-attn 2 instead of cuDNN's fused attention (recipe.py ``flash_attention``);
# the other recipes set NVTE_FUSED_ATTN=1 or leave TE's default (cuDNN on Hopper)
FLASH_ATTN_2 = ("grok1-314b",)
# grok1/cfg/grok1_314b.yaml: moe_pad_expert_input_to_capacity true, moe_expert_capacity_factor
# 1.0: every expert runs exactly its capacity (drop and pad), so no EP rank is busier than the
# mean (recipe.py ``moe_imbalance`` 1.0)
CAPACITY_PADDED = ("grok1-314b",)


def dgx_h100() -> LLMCluster:
    gpu = get_gpu("H100 SXM")
    link = gpu_intra_link(gpu)
    return LLMCluster(gpu, 8, link.bandwidth_Bps, 400e9 / 8, intra_latency_s=link.latency_s)


def _int(value: str, default: int = 1) -> int:
    return default if value in ("", "NA") else int(value)


def dgxc_runs(path: Path = DATA) -> list[dict]:
    """Every row as {label, shape, layout, cluster, options, measured_s, tags}."""
    cluster = dgx_h100()
    out = []
    for r in read_rows(path):
        gpus, seq = int(r["n_gpus"]), int(r["seq_len"])
        tp, pp, cp, ep = _int(r["tp"]), _int(r["pp"]), _int(r["cp"]), _int(r["ep"])
        vp, mbs = _int(r["vp"], VP_NOT_LISTED.get(r["model"], 1)), int(r["mbs"])
        dp = gpus // (tp * pp * cp)
        listed, implied = int(r["gbs"]), float(r["gbs_implied_by_throughput"])
        gbs = listed if abs(implied / listed - 1) < 0.02 else round(implied)
        experts = int(r["experts"])
        shape = TransformerShape(int(r["layers"]), int(r["hidden"]), int(r["heads"]), seq,
                                 ffn=int(r["ffn"]), vocab=int(r["vocab"]),
                                 kv_heads=int(r["kv_heads"]), gated_mlp=r["mlp"] in GATED,
                                 tied_embeddings=r["model"].startswith("gpt3"),
                                 experts=experts, top_k=int(r["top_k"]))  # fmt: skip
        layout = Layout(tp=tp, pp=pp, dp=dp, cp=cp, ep=ep, global_batch=gbs, micro_batch=mbs,
                        interleave=vp, schedule="interleaved" if vp > 1 else "1f1b",
                        zero=1, sequence_parallel=tp > 1)  # fmt: skip
        fp8 = r["precision"] == "FP8"
        options = {"precision": "fp8" if fp8 else "bf16", "framework": "megatron",
                   "recipe": TrainingRecipe(reduce_dtype="bf16", async_tp=tp > 1,
                                            fp8_recipe="delayed" if fp8 else None,
                                            flash_attention=2 if r["model"] in FLASH_ATTN_2
                                            else None,
                                            moe_imbalance=1.0 if r["model"] in CAPACITY_PADDED
                                            else None)}  # fmt: skip
        label = f"{r['model']} {r['precision']} x{gpus} tp{tp} pp{pp} cp{cp} ep{ep} vp{vp}"
        out.append({"label": label, "shape": shape, "layout": layout, "cluster": cluster,
                    "options": options, "measured_s": float(r["step_time_s"]),
                    "tags": {"model": r["model"]}})  # fmt: skip
    return out
