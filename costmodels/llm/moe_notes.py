"""What a MoE prediction assumed about its expert exchange, in one line (issue 39 item 5: placement
and load imbalance stated, never silent).

The line names where the EP group sits (NVLink domains spanned, as costmodels/llm/group_span.py
places the ranks in the job's domains: Megatron-Core's expert rank generator orders them
tp-ep-dp-pp with the experts' own TP degree innermost, so EP members lie ``etp`` ranks apart,
whatever the attention layers' CP), how its exchange is priced
(costmodels/llm/moe_dispatch.py) and the busiest EP rank's load factor with its source
(costmodels/llm/moe_routing.py). Example::

    >>> from costmodels.hardware import get_gpu
    >>> from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape
    >>> moe = TransformerShape(4, 1024, 8, 1024, experts=8, top_k=2)
    >>> node = LLMCluster(get_gpu("h100"), 8, 370e9, 50e9)
    >>> moe_note(moe, Layout(tp=1, pp=1, dp=8, ep=8, global_batch=8), node)[:60]
    'MoE: EP 8 inside one NVLink domain of 8 GPUs (NVLink only); '
"""

from __future__ import annotations

from costmodels.llm.gpu_arch import gpu_arch
from costmodels.llm.group_span import group_span, job_domain
from costmodels.llm.moe_routing import busiest_rank_factor, imbalance_note
from costmodels.llm.recipe import DEFAULT_RECIPE, TrainingRecipe
from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape


def _exchange(shape: TransformerShape, nodes: int, dispatcher: str | None,
              fabric: str = "NVLink") -> str:  # fmt: skip
    if dispatcher in ("deepep", "hybridep") or (shape.node_limit and nodes > 1
                                                and dispatcher != "alltoall"):  # fmt: skip
        name = dispatcher or f"node-limited routing (at most {shape.node_limit} nodes)"
        which = "HybridEP's" if dispatcher == "hybridep" else "DeepEP's"
        return (f"exchange {name} as DeepEP runs it: once per target node over the network at "
                f"the NCCL model's NIC rate, once per target GPU over {fabric} at {which} "
                "measured share" + ("" if fabric == "NVLink" else " (NVIDIA's, on NVLink: "
                                    "unvalidated here)"))  # fmt: skip
    return "exchange: NCCL all-to-all, one copy per routed expert"


def moe_note(shape: TransformerShape, layout: Layout, cluster: LLMCluster,
             recipe: TrainingRecipe = DEFAULT_RECIPE) -> str:  # fmt: skip
    """The MoE assumptions of a prediction ("" for a dense model or EP 1)."""
    if shape.experts <= 1 or layout.ep <= 1:
        return ""
    world = layout.gpus
    domain = job_domain(world, cluster.gpus_per_node)
    span = group_span(layout.expert_tp, layout.ep, world, domain)
    fabric = "Infinity Fabric" if gpu_arch(cluster.gpu.name).startswith("cdna") else "NVLink"
    if span.nodes == 1:
        where = f"inside one {fabric} domain of {domain} GPUs ({fabric} only)"
    else:
        members = f"{span.per_node} in each" if span.per_node else "unevenly"
        where = (f"over {span.nodes} {fabric} domains of {domain} GPUs, {members} ({fabric} "
                 "inside, the NICs across)")  # fmt: skip
    tokens = layout.micro_batch * shape.seq_len / layout.cp
    tokens /= layout.tp if layout.sequence_parallel else 1
    stated = recipe.moe_imbalance is not None
    factor = recipe.moe_imbalance or busiest_rank_factor(tokens * shape.top_k * layout.ep,
                                                         layout.ep)  # fmt: skip
    stride = "" if layout.expert_tp == 1 else f" (ranks {layout.expert_tp} apart, etp innermost)"
    return (f"MoE: EP {layout.ep}{stride} {where}; "
            f"{_exchange(shape, span.nodes, recipe.moe_dispatcher, fabric)}; "
            f"{imbalance_note(factor, stated)}")
