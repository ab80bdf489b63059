"""Guide: tensor, pipeline and data parallelism with ZeRO for large language models.

Every number is ``costmodels.llm``: ``planner.plan`` (every valid TP x PP x DP layout with
micro-batch, interleaving, ZeRO stage, sequence parallelism and recomputation, those that fit,
fastest first) and ``step.predict_step`` for the layouts the planner would not try (TP across
nodes). Two models on two clusters, each at three sizes; the planner's search is not narrowed,
so the best layouts are what ``commatlas plan-llm`` prints.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import altair as alt
import pandas as pd

from commatlas.docs_site import Files
from commatlas.docs_site.guides import _common as c
from costmodels.hardware import get_gpu, get_link
from costmodels.llm.communication import group_span
from costmodels.llm.megatron_table import selene_cluster
from costmodels.llm.memory import model_state_bytes
from costmodels.llm.planner import PlanCandidate, plan
from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape
from costmodels.llm.step import StepPrediction, predict_step
from costmodels.workloads.gpt import GPT2_VOCAB
from costmodels.workloads.llama import LLAMA_CONFIGS
from taxonomy import Taxonomy

GPU_COUNTS = (64, 1024)  # each plan predicts some 6000 layouts: two sizes keep builds short
GIB = 2**30


def llama_70b() -> TransformerShape:
    layers, hidden, ffn, heads, kv, vocab = LLAMA_CONFIGS["Llama 3 70B"]
    return TransformerShape(layers, hidden, heads, 4096, ffn=ffn, vocab=vocab, kv_heads=kv,
                            gated_mlp=True, tied_embeddings=False)  # fmt: skip


def gpt3_175b() -> TransformerShape:
    return TransformerShape(96, 12_288, 96, 2048, vocab=GPT2_VOCAB)  # Brown et al. Table 2.1


def h100_cluster() -> LLMCluster:
    """H100 SXM nodes of 8, NVLink 4 inside, one NDR link (400 Gbit/s) per GPU; nominal rates
    and the default latencies, as ``megatron_table.selene_cluster`` builds the A100 one."""
    return LLMCluster(get_gpu("h100"), 8, get_link("nvlink4").bandwidth_Bps,
                      get_link("ndr").bandwidth_Bps)  # fmt: skip


# name -> (shape, cluster, cluster description, global batch in sequences)
SETUPS = {
    "Llama 3 70B": (llama_70b, h100_cluster, "H100 SXM, NVLink 4, one NDR link per GPU", 512),
    "GPT-3 175B": (gpt3_175b, selene_cluster, "A100 80 GB, NVLink 3, one HDR link per GPU", 1536),
}
TP_STUDY = ("Llama 3 70B", 1024)  # the model and GPU count of the "TP inside a node" table


@cache
def plans(model: str, gpus: int) -> tuple[PlanCandidate, ...]:
    shape, cluster, _, batch = SETUPS[model]
    return tuple(plan(shape(), gpus, cluster(), batch))


def layout_text(layout: Layout) -> str:
    parts = [f"TP {layout.tp} × PP {layout.pp} × DP {layout.dp}", f"mb {layout.micro_batch}"]
    parts += [f"v {layout.interleave}"] if layout.interleave > 1 else []
    parts += [f"ZeRO-{layout.zero}"] if layout.zero else []
    parts += ["SP"] if layout.sequence_parallel else []
    parts += [f"{layout.recompute} recompute"] if layout.recompute != "none" else []
    return ", ".join(parts)


def best_rows() -> list[list[str]]:
    out = []
    for model in SETUPS:
        for gpus in GPU_COUNTS:
            found = plans(model, gpus)
            if not found:
                out.append([model, str(gpus), "nothing fits", *["—"] * 8])
                continue
            layout, p = found[0].layout, found[0].prediction
            out.append([model, str(gpus), layout_text(layout), f"{p.iteration_time_s:.3g}",
                        f"{p.model_flops_utilization:.0%}", f"{p.memory_per_gpu_bytes / GIB:.1f}",
                        f"{p.bubble_fraction:.1%}", f"{p.tp_comm_s:.3g}", f"{p.pp_comm_s:.3g}",
                        f"{p.dp_comm_s:.3g}", f"{p.exposed_comm_s:.3g}"])  # fmt: skip
    return out


def zero_rows(model: str, gpus: int) -> list[list[str]]:
    """The fastest fitting layout at each ZeRO stage (from the same plan)."""
    out = []
    for stage in (0, 1, 2, 3):
        found = [x for x in plans(model, gpus) if x.layout.zero == stage]
        if not found:
            out.append([str(stage), "nothing fits", "—", "—"])
            continue
        p = found[0].prediction
        out.append([str(stage), layout_text(found[0].layout), f"{p.iteration_time_s:.3g}",
                    f"{p.memory_per_gpu_bytes / GIB:.1f}"])  # fmt: skip
    return out


def tp_layout(tp: int) -> Layout:
    """The best TP_STUDY layout with its TP degree replaced (PP kept, DP takes the rest)."""
    model, gpus = TP_STUDY
    layout = plans(model, gpus)[0].layout
    dp = gpus // (tp * layout.pp)
    # The batch must still split into whole micro-batches: keep the largest micro-batch size up
    # to the best layout's that divides the sequences per data-parallel rank.
    if layout.global_batch % dp:
        raise ValueError(f"tp={tp}: {dp} data-parallel ranks cannot split {layout.global_batch}")
    per_rank = layout.global_batch // dp
    micro = max(b for b in range(1, layout.micro_batch + 1) if per_rank % b == 0)
    layout = replace(layout, tp=tp, dp=dp, micro_batch=micro,
                     sequence_parallel=layout.sequence_parallel and tp > 1)  # fmt: skip
    if layout.interleave > 1 and layout.micro_batches % layout.pp:  # interleaving needs m % pp
        layout = replace(layout, interleave=1, schedule="1f1b")
    return layout


def tp_study() -> list[tuple[int, int, float, float, StepPrediction]]:
    """(tp, nodes a TP group spans, TP seconds and compute seconds per layer and micro-batch,
    prediction) for tp = 1 .. 16 on TP_STUDY."""
    model, gpus = TP_STUDY
    shape_of, cluster_of, _, _ = SETUPS[model]
    shape, cluster = shape_of(), cluster_of()
    out = []
    for tp in (1, 2, 4, 8, 16):
        try:
            layout = tp_layout(tp)
        except ValueError:  # more data-parallel ranks than sequences: no such layout
            continue
        span = group_span(1, tp, layout.gpus, cluster.gpus_per_node)
        p = predict_step(shape, layout, cluster)
        per = layout.micro_batches * shape.layers / layout.pp  # layer passes per step
        out.append((tp, span.nodes, p.tp_comm_s / per, p.compute_s / per, p))
    return out


def tp_rows() -> list[list[str]]:
    return [[str(tp), str(nodes), f"{1e3 * comm:.3g}", f"{1e3 * compute:.3g}",
             f"{p.tp_comm_s:.3g}", f"{p.iteration_time_s:.3g}",
             f"{p.memory_per_gpu_bytes / GIB:.1f}", "yes" if p.fits else "no"]
            for tp, nodes, comm, compute, p in tp_study()]  # fmt: skip


def replicated_state(model: str) -> float:
    """Bytes of weights + gradients + Adam states one GPU holds with plain data parallelism."""
    shape_of, _, _, batch = SETUPS[model]
    return sum(model_state_bytes(shape_of(), Layout(1, 1, 1, batch)))


def chart_svg() -> str:
    rows = []
    for model in SETUPS:
        for gpus in GPU_COUNTS:
            if plans(model, gpus):
                p = plans(model, gpus)[0].prediction
                rows += [{"model": model, "GPUs": str(gpus), "dimension": dim, "s": value}
                         for dim, value in (("TP", p.tp_comm_s), ("PP", p.pp_comm_s),
                                            ("DP", p.dp_comm_s))]  # fmt: skip
    chart = (
        alt.Chart(pd.DataFrame(rows))
        .mark_bar()
        .encode(alt.X("s:Q", title="communication per step (s), before overlap"),
                alt.Y("GPUs:N", sort=[str(g) for g in GPU_COUNTS]),
                alt.Color("dimension:N", sort=["TP", "PP", "DP"]))
        .properties(width=420, height=90)
        .facet(row=alt.Row("model:N", title=None, sort=list(SETUPS)))
        .resolve_scale(x="independent")
    )  # fmt: skip
    return c.chart_svg(chart)


def facts() -> dict[str, object]:
    """Numbers the prose states (the tests re-check them)."""
    study = {tp: (nodes, comm, compute, p) for tp, nodes, comm, compute, p in tp_study()}
    inside = max(tp for tp, row in study.items() if row[0] == 1)
    across = min(tp for tp, row in study.items() if row[0] > 1)
    best = {(m, g): plans(m, g)[0] for m in SETUPS for g in GPU_COUNTS if plans(m, g)}
    return {
        "inside": inside, "across": across,
        "per_layer": {tp: study[tp][1:3] for tp in (inside, across)},
        "step": (study[inside][3].iteration_time_s, study[across][3].iteration_time_s),
        "link_ratio": h100_cluster().intra_bandwidth_Bps / h100_cluster().inter_bandwidth_Bps,
        "max_tp": max(x.layout.tp for x in best.values()),
        "bubble": (min(x.prediction.bubble_fraction for x in best.values()),
                   max(x.prediction.bubble_fraction for x in best.values())),
        "zero": {k: x.layout.zero for k, x in best.items()},
        "plain_dp_fits": sum(x.layout.tp * x.layout.pp == 1 and x.layout.zero == 0
                             for m in SETUPS for g in GPU_COUNTS for x in plans(m, g)),
        "max_v": max(x.layout.interleave for x in best.values()),
    }  # fmt: skip


def page_text(tax: Taxonomy) -> str:
    f = facts()
    model, gpus = TP_STUDY
    gpu_gib = h100_cluster().gpu.memory_gib
    zero_model, zero_gpus = "GPT-3 175B", 64
    stages = ", ".join(f"ZeRO-{z}" if z else "no ZeRO" for z in f["zero"].values())
    link = c.record_link
    out = [
        "# Parallelism for large language models: TP, PP, DP and ZeRO", "",
        "**The question.** A model too large for one GPU must be split: tensor parallelism (TP) "
        "cuts every layer across GPUs, pipeline parallelism (PP) gives each GPU a run of "
        "layers, data parallelism (DP) replicates the result, and ZeRO shards the replicated "
        "model state over the DP group. Which combination is fastest for a given model and "
        "cluster, what does it cost in memory, pipeline bubble and communication, and why does "
        "TP stay inside a node?", "",
        "**Values used.** "
        + "; ".join(f"{m}: {d}, global batch {b} sequences of {s().seq_len} tokens"
                    for m, (s, _, d, b) in SETUPS.items())
        + "; nominal link rates (the A100 cluster is "
        "`costmodels.llm.megatron_table.selene_cluster`, "
        "the node of Narayanan et al.'s runs), 8 GPUs per node, bf16 activations, "
        "mixed-precision Adam (16 bytes per parameter), 10 % of GPU memory kept free. Every "
        "layout is predicted by `costmodels.llm.step.predict_step` (its "
        "[validation against Megatron-LM's published runs](../validation-llm.md)); the planner "
        "tries every valid TP × PP × DP, micro-batch, interleaving, ZeRO stage, sequence "
        "parallelism and recomputation, keeps what fits and ranks by step time.", "",
        "## Best layouts", "",
        *c.table(["model", "GPUs", "fastest layout that fits", "step (s)", "MFU",
                  "memory (GiB)", "bubble", "TP comm (s)", "PP comm (s)", "DP comm (s)",
                  "exposed comm (s)"], best_rows()),
        "*mb: micro-batch; v: virtual stages per GPU "
        f"({link(tax, 'megatron-3d', 'interleaved 1F1B')}); "
        f"SP: {link(tax, 'seq-parallel', 'sequence parallelism')}. Communication is per step "
        "on one GPU of the busiest stage, before overlap; exposed is what adds to the step.*",
        "",
        "![Communication per step of the best layouts, by parallel dimension]"
        "(plots/llm-communication.svg)", "",
        "- **Memory decides first.** Replicating the model state (weights, gradients, Adam) "
        f"takes {replicated_state('Llama 3 70B') / GIB:.0f} GiB for Llama 3 70B and "
        f"{replicated_state('GPT-3 175B') / GIB:.0f} GiB for GPT-3 175B, against {gpu_gib:g} "
        f"GiB per GPU, so {'no' if f['plain_dp_fits'] == 0 else 'some'} fitting layout is "
        "plain data parallelism: the state must be split over TP and PP ranks, sharded by "
        f"ZeRO over the DP ranks, or both. The best layouts use {stages} (in table order).",
        f"- **The bubble is small** in the best layouts ({f['bubble'][0]:.1%}–"
        f"{f['bubble'][1]:.1%}): with m micro-batches per pipeline and v virtual stages it is "
        r"\((p - 1)/(v m)\) of the compute "
        f"({link(tax, 'megatron-3d')}; {link(tax, 'gpipe')} and 1F1B have v = 1).",
        f"- **TP degree**: at most {f['max_tp']} in every best layout, although the planner "
        f"allows up to the {h100_cluster().gpus_per_node} GPUs of a node: wider TP shrinks each "
        "GPU's matrices (less efficient GEMMs) and adds collectives.", "",
        "## Why TP stays inside a node", "",
        "Tensor parallelism runs collectives on the activations of every layer in every "
        f"micro-batch ({link(tax, 'megatron-tp')}), on the critical path. Below, the best "
        f"{model} layout on {gpus} GPUs with only its TP degree changed (PP kept, DP takes the "
        "rest, no interleaving where the micro-batches no longer divide by PP). A TP group "
        "of 8 fills one node and runs on NVLink; a group of 16 spans two "
        f"nodes and crosses NDR, {f['link_ratio']:.0f}× slower per GPU.", "",
        *c.table(["TP", "nodes per TP group", "TP per layer and micro-batch (ms)",
                  "compute per layer and micro-batch (ms)", "TP comm per step (s)", "step (s)",
                  "memory (GiB)", "fits"], tp_rows()),
        f"At TP {f['inside']} a layer's TP collectives take "
        f"{1e3 * f['per_layer'][f['inside']][0]:.3g} ms against "
        f"{1e3 * f['per_layer'][f['inside']][1]:.3g} ms of its compute; at TP {f['across']} "
        f"they take {1e3 * f['per_layer'][f['across']][0]:.3g} ms against "
        f"{1e3 * f['per_layer'][f['across']][1]:.3g} ms, and the step grows from "
        f"{f['step'][0]:.3g} s to {f['step'][1]:.3g} s. Hence the planner, like PTD-P "
        f"({link(tax, 'megatron-3d')}), keeps TP within a node and puts pipeline stages across "
        "nodes.", "",
        f"## ZeRO: the fastest layout at each stage ({zero_model}, {zero_gpus} GPUs)", "",
        f"{link(tax, 'zero')} stage 1 shards the optimizer state over the DP group, stage 2 also "
        "the gradients, stage 3 also the weights (which must then be gathered for every "
        "micro-batch). More sharding frees memory for fewer pipeline stages or smaller TP, at "
        "the price of more DP traffic:", "",
        *c.table(["ZeRO stage", "fastest layout that fits", "step (s)", "memory (GiB)"],
                 zero_rows(zero_model, zero_gpus)),
        *c.reproduce(reproduce_lines()),
    ]  # fmt: skip
    return "\n".join(out)


def reproduce_lines() -> list[str]:
    shape = gpt3_175b()
    a100 = selene_cluster()
    h100 = h100_cluster()
    return [
        "- GPT-3 175B on 1024 A100 (the last table row): `commatlas plan-llm --layers "
        f"{shape.layers} --hidden {shape.hidden} --heads {shape.heads} --seq-len "
        f"{shape.seq_len} --vocab {shape.vocab} --global-batch {SETUPS['GPT-3 175B'][3]} "
        f"--gpus 1024 --gpu a100-80gb --intra \"{a100.intra_bandwidth_Bps / 1e9:g} GB/s\" "
        f"--inter \"{a100.inter_bandwidth_Bps / 1e9:g} GB/s\" --top 5`; "
        "`commatlas predict-llm` with the same model flags and `--tp --pp --dp ...` predicts "
        "one layout.",
        "- Llama 3 70B (grouped-query attention, SwiGLU, untied embeddings; Llama 3.1 70B has "
        "the same layers with a longer context): `commatlas plan-llm --model llama-3.1-70b "
        f"--seq-len {llama_70b().seq_len} --global-batch {SETUPS['Llama 3 70B'][3]} --gpus "
        f"{TP_STUDY[1]} --gpu h100 --intra \"{h100.intra_bandwidth_Bps / 1e9:g} GB/s\" --inter "
        f"\"{h100.inter_bandwidth_Bps / 1e9:g} GB/s\" --top 5`, or the LLM planner page of the "
        "[calculator](../../calculator.md) with the same model, sequence, batch, GPUs and links.",
        "- In Python: `costmodels.llm.planner.plan(shape, gpus, cluster, global_batch)` and "
        "`costmodels.llm.step.predict_step(shape, layout, cluster)`.",
    ]  # fmt: skip


def files(tax: Taxonomy) -> Files:
    return {
        "generated/guides/llm-parallelism.md": page_text(tax),
        "generated/guides/plots/llm-communication.svg": chart_svg(),
    }
