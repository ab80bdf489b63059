"""The flags of ``predict-llm`` / ``plan-llm`` and what they resolve to (shape, cluster, layout,
step options). Every count is bounded (costmodels.limits) by argparse, so absurd input is one
line naming the flag; the rules between flags live in costmodels.llm.layout_check and
costmodels.llm.shape_inputs.
"""

from __future__ import annotations

import argparse
from typing import Any

from commatlas.cli_types import bounded_int, choice_list, int_list, nonempty, positive_float
from commatlas.llm_recipe_args import add_recipe_flags
from costmodels.hardware.defaults import LLM_INTER
from costmodels.limits import (
    MAX_BATCH,
    MAX_GPUS,
    MAX_GPUS_PER_NODE,
    MAX_LAYERS,
    MAX_SEQUENCE,
    MAX_WIDTH,
)
from costmodels.llm.frameworks import FRAMEWORKS_ORDER as FRAMEWORKS
from costmodels.llm.planner import DEFAULT_MICRO_BATCHES
from costmodels.llm.precision import PRECISIONS
from costmodels.llm.presets import MODEL_NAMES
from costmodels.llm.shapes import MAX_MTP, MLP_KINDS, POSITIONS

RECOMPUTE = ("none", "selective", "op", "full")
SHAPE_KEYS = ("layers", "hidden", "heads", "seq_len", "ffn", "vocab", "kv_heads", "gated_mlp",
              "tied_embeddings", "experts", "top_k", "head_dim", "mlp", "position",
              "mtp")  # fmt: skip


def add_model_flags(parser: argparse.ArgumentParser) -> None:
    """The model flags alone (``--model``/``--hf-config`` and the shape flags), without the
    training-only ``--seq-len`` and ``--global-batch`` (predict-serving sets the sequence from
    its prompt and output lengths)."""
    _model_flags(parser, training=False)


def _model_flags(
    parser: argparse.ArgumentParser, training: bool = True, batch_required: bool = True
) -> None:
    model = parser.add_argument_group("model (a preset or config, shape flags override it)")
    source = model.add_mutually_exclusive_group()
    source.add_argument("--model", type=nonempty(80), help="named model: " + ", ".join(MODEL_NAMES))
    source.add_argument("--hf-config", type=nonempty(), metavar="CONFIG_JSON",
                        help="a Hugging Face config.json (Llama, Mistral, Mixtral, Qwen2, GPT-2, "
                        "GPT-NeoX, DeepSeek-V3, Qwen3, Qwen3-MoE, Llama 4, GPT-OSS, Kimi K2, "
                        "Nemotron)")  # fmt: skip
    width = bounded_int(1, MAX_WIDTH)
    model.add_argument("--layers", type=bounded_int(1, MAX_LAYERS), help="transformer layers")
    model.add_argument("--hidden", type=width, help="hidden size")
    model.add_argument("--heads", type=width, help="attention heads")
    model.add_argument("--kv-heads", type=width, help="key-value heads (grouped-query attention)")
    model.add_argument("--ffn", type=width, help="FFN width per expert (default 4 x hidden)")
    model.add_argument("--vocab", type=width, help="vocabulary (default 51200 without a model)")
    model.add_argument("--experts", type=width, help="experts per MoE layer (1 = dense)")
    model.add_argument("--top-k", type=width, help="experts each token is routed to")
    if training:
        model.add_argument(
            "--seq-len",
            type=bounded_int(1, MAX_SEQUENCE),
            help="tokens per sequence (default: the model's pre-training context)",
        )
    model.add_argument("--gated-mlp", action=argparse.BooleanOptionalAction, default=None,
                       help="SwiGLU MLP with three matrices (Llama style)")  # fmt: skip
    # issue 39: what --gated-mlp bundles, one by one
    model.add_argument("--head-dim", type=width,
                       help="width of one attention head (default hidden / heads; Qwen3 128)")
    model.add_argument("--mlp", choices=MLP_KINDS,
                       help="MLP activation: swiglu (3 matrices), gelu or relu2 (squared ReLU, "
                       "Nemotron-4; 2 matrices); sets --gated-mlp to match")
    model.add_argument("--position", choices=POSITIONS,
                       help="position encoding: rope (no parameters) or learned (a seq-len x "
                       "hidden table); default: rope with a gated MLP, learned without")
    tied = model.add_mutually_exclusive_group()
    tied.add_argument(
        "--untied-embeddings",
        dest="tied_embeddings",
        action="store_const",
        const=False,
        default=None,
        help="separate output head (Llama style)",
    )
    tied.add_argument(
        "--tied-embeddings",
        dest="tied_embeddings",
        action="store_const",
        const=True,
        help="output head shares the input embedding (GPT style)",
    )
    if training:  # DeepSeek-V3's multi-token prediction (issue 39; config num_nextn_predict_layers)
        model.add_argument("--mtp", type=bounded_int(0, MAX_MTP), metavar="N",
                           help="multi-token prediction depth: N modules (a block of the last "
                           "layer's kind, a 2h x h projection, another head) on the last "
                           "pipeline stage, as Megatron's --mtp-num-layers (DeepSeek-V3: 1)")
        model.add_argument(
            "--global-batch", type=bounded_int(1, MAX_BATCH), required=batch_required,
            help="sequences per optimizer step" + ("" if batch_required else (
                " (optional: adds the step time and the interval in steps)")),
        )  # fmt: skip


def add_cluster_flags(group: Any, gpu_default: str = "a100-80gb") -> None:
    """--gpu, --gpus-per-node, --intra and the network flags (--cluster, --inter one NIC,
    --nics-per-node, --transport, --sharp; commatlas.network_flags), read by
    llm_commands.cluster_and_source, on a parser or an argument group; every command that
    prices a transformer shares them."""
    from commatlas.network_flags import add_network_flags

    group.add_argument(
        "--gpu",
        type=nonempty(80),
        help=f"GPU preset, e.g. a100-80gb, h100, h200, b200, mi300x (default: the --cluster "
        f"preset's, else {gpu_default})",
    )
    group.set_defaults(gpu_default=gpu_default)
    group.add_argument(
        "--gpus-per-node",
        type=bounded_int(1, MAX_GPUS_PER_NODE),
        help="GPUs per node (the intra-node fabric's reach; default: the preset's, else 8)",
    )
    group.add_argument(
        "--intra",
        type=nonempty(64),
        help="intra-node bandwidth per GPU and direction (default: the GPU's own fabric as "
        "NCCL's topology counts it, e.g. A100 240 GB/s, H100 370.8 GB/s; PCIe without NVLink)",
    )
    add_network_flags(group, inter_default=f"{LLM_INTER} as achieved, one NIC per GPU: the "
                      "calculator's default too (costmodels.hardware.defaults)")  # fmt: skip


def _cluster_and_step_flags(parser: argparse.ArgumentParser) -> None:
    cluster = parser.add_argument_group("cluster and step")
    add_cluster_flags(cluster)
    cluster.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="bf16",
        help="GEMM precision (fp8 needs a GPU with fp8 tensor cores)",
    )
    cluster.add_argument(
        "--framework",
        choices=FRAMEWORKS,
        default="megatron",
        help="which kernels are fused: Megatron-Core/Transformer Engine, Megatron-LM without "
        "flash attention (legacy), PyTorch eager, or torch.compile; megatron-fsdp: Megatron-Core "
        "with its own FSDP; deepspeed: DeepSpeed ZeRO around PyTorch eager kernels (no TP/PP)",
    )
    cluster.add_argument(
        "--measured-step",
        type=positive_float,
        metavar="SECONDS",
        help="seconds of one optimizer step measured on --measured-layout (predict-llm: by "
        "default the layout given); the JSON says what was fitted",
    )
    cluster.add_argument(
        "--measured-layout",
        type=nonempty(300),
        metavar="KEY=VALUE,...",
        help="the run the step was measured on, e.g. tp=8,pp=2,dp=4,mb=1 (keys tp pp dp mb v "
        "zero recompute sp cp ep, and framework= precision= global_batch= seq= model= for a "
        "step measured on another run)",
    )
    cluster.add_argument(
        "--measured",
        type=nonempty(),
        metavar="FILE",
        help="CSV of several measured steps (columns step_s and the --measured-layout keys): "
        "fitted robustly, outliers reported by row",
    )
    cluster.add_argument(
        "--calibration",
        type=nonempty(),
        metavar="FILE",
        help="calibration file of commatlas import-trace: its GEMM / memory-bound scales and "
        "intra-node efficiency",
    )
    cluster.add_argument("--json", action="store_true", help="print JSON")  # fmt: skip
    add_recipe_flags(parser)


def add_predict_flags(parser: argparse.ArgumentParser, batch_required: bool = True) -> None:
    """predict-llm's flags; ``batch_required=False`` for commands that need the batch only for
    an optional step time (predict-goodput)."""
    _model_flags(parser, batch_required=batch_required)
    _cluster_and_step_flags(parser)
    layout = parser.add_argument_group("layout")
    count = bounded_int(1, MAX_GPUS)
    for flag, what in (("--tp", "tensor"), ("--pp", "pipeline"), ("--dp", "data")):
        layout.add_argument(flag, type=count, required=True, help=f"{what}-parallel degree")
    layout.add_argument("--cp", type=count, default=1, help="context-parallel degree")
    layout.add_argument("--ep", type=count, default=1, help="expert-parallel degree (in cp x dp)")
    layout.add_argument("--etp", type=bounded_int(0, MAX_GPUS), default=0,
                        help="expert tensor-parallel degree (Megatron's --expert-tensor-parallel-"
                        "size; default: --tp). With it, --ep x --etp ranks are carved from "
                        "tp x cp x dp, so EP may span the TP group")  # fmt: skip
    layout.add_argument(
        "--micro-batch", type=bounded_int(1, MAX_BATCH), default=1, help="sequences per micro-batch"
    )
    layout.add_argument(
        "--interleave",
        type=bounded_int(1, MAX_LAYERS),
        default=1,
        help="virtual pipeline stages per GPU",
    )
    layout.add_argument("--zero", type=int, choices=[0, 1, 2, 3], default=0,
                        help="ZeRO stage over the data-parallel group: 1 optimizer states, "
                        "2 + gradients, 3 + weights (FSDP; default 0, also for "
                        "--framework megatron-fsdp, whose own default is 3)")  # fmt: skip
    layout.add_argument(
        "--sequence-parallel",
        action="store_true",
        help="Megatron sequence parallelism in the TP group (norms, dropout)",
    )
    layout.add_argument("--recompute", choices=RECOMPUTE, default="none",
                        help="activation recomputation: selective = Megatron's attention core, "
                        "op = torchtitan's per-op policy, full = every layer (see "
                        "--recompute-every)")  # fmt: skip
    layout.add_argument(
        "--recompute-every",
        type=bounded_int(1, MAX_LAYERS),
        default=1,
        help="with --recompute full: checkpoint every k-th layer only",
    )
    layout.add_argument("--dp-shard", type=bounded_int(0, MAX_GPUS), default=0,
                        help="with --zero 3: HSDP, shard over groups of this many ranks and "
                        "replicate across them (0 = shard over all of dp x cp)")  # fmt: skip
    layout.add_argument("--tp-across-nodes", action="store_true",
                        help="allow --tp above --gpus-per-node")  # fmt: skip
    _stage_layer_flags(layout)


def _stage_layer_flags(group: Any) -> None:
    """Megatron's --decoder-first/last-pipeline-num-layers (issue 39), for both commands."""
    for end in ("first", "last"):
        group.add_argument(f"--{end}-stage-layers", type=bounded_int(0, MAX_LAYERS), default=0,
                           help=f"layers on the {end} pipeline stage (Megatron's --decoder-"
                           f"{end}-pipeline-num-layers; the other stages share the rest "
                           "equally, also with --interleave; default 0: the even split)")


def add_plan_flags(parser: argparse.ArgumentParser) -> None:
    _model_flags(parser)
    _cluster_and_step_flags(parser)
    search = parser.add_argument_group("search")
    search.add_argument("--gpus", type=bounded_int(1, MAX_GPUS), required=True, help="total GPUs")
    search.add_argument("--top", type=bounded_int(1, 10_000), default=10, help="layouts to print")
    search.add_argument(
        "--cp",
        type=int_list(1, MAX_GPUS),
        default=(1,),
        help="context-parallel degrees to try, e.g. 1,2",
    )
    search.add_argument(
        "--ep",
        type=int_list(1, MAX_GPUS),
        default=(1,),
        help="expert-parallel degrees to try, e.g. 1,8",
    )
    # The defaults are the planner's, which the calculator's LLM page starts from too (issue 30).
    search.add_argument(
        "--micro-batches", type=int_list(1, MAX_BATCH), default=DEFAULT_MICRO_BATCHES,
        help="micro-batch sizes (sequences) to try, e.g. 1,2,4 (default: "
        f"{','.join(map(str, DEFAULT_MICRO_BATCHES))})",
    )  # fmt: skip
    search.add_argument(
        "--zero-stages", type=int_list(0, 3),
        help="ZeRO stages over the data-parallel group to try, e.g. 0,1,2,3 (default: the "
        "framework's: 0,1 for Megatron, whose distributed optimizer is ZeRO-1; 0,2,3 for "
        "PyTorch: DDP, FSDP without and with resharding; 1,2,3 for DeepSpeed; 2,3 for "
        "Megatron-FSDP)",
    )  # fmt: skip
    search.add_argument(
        "--recompute-modes",
        type=choice_list(RECOMPUTE),
        help="activation recomputation to try, e.g. none,full (default: none,selective,full "
        "for Megatron, none,op,full for PyTorch)",
    )
    search.add_argument(
        "--sequence-parallel",
        choices=["both", "on", "off"],
        default="both",
        help="sequence parallelism with TP > 1: try both, on only or off only",
    )
    search.add_argument("--max-interleave", type=bounded_int(1, MAX_LAYERS),
                        help="largest virtual stages per GPU (default: any)")  # fmt: skip
    _stage_layer_flags(search)
    search.add_argument("--etp", type=int_list(0, MAX_GPUS), default=(0,),
                        help="expert tensor-parallel degrees to try, e.g. 1 (0 = the layout's "
                        "--tp); with them EP may span the TP group")  # fmt: skip


def shape_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The shape flags that were given (None for the others)."""
    return {key: getattr(args, key) for key in SHAPE_KEYS}


def layout_json(layout: Any) -> dict[str, Any]:
    """The layout fields the JSON output shows."""
    keys = ("tp", "pp", "dp", "cp", "ep", "micro_batch", "interleave", "zero",
            "sequence_parallel", "recompute", "global_batch", "schedule", "recompute_every",
            "dp_shard", "first_stage_layers", "last_stage_layers", "etp")  # fmt: skip
    return {key: getattr(layout, key) for key in keys}
