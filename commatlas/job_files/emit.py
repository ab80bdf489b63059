"""``plan-llm --emit torchtitan|megatron|deepspeed``: the fastest layout written back as that
framework's config or command line, with the same fields the readers read (issue 41), so that
``predict-llm --from`` on what was written prices the same step. Written through
costmodels.safe_output (checked before the search, written whole or not at all).

What a framework cannot say is one error line naming it (torchtitan has no ZeRO-1 or Megatron's
selective recompute; Megatron-LM's sharding is the distributed optimizer, ZeRO 1; DeepSpeed alone
has no TP, PP or CP), so a plan is searched with that framework's choices first.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import Any

from commatlas.cli_types import nonempty
from costmodels.safe_output import OutputTarget, check_output, write_output

EMIT_FORMATS = ("torchtitan", "megatron", "deepspeed")
_PYTORCH = ("pytorch", "pytorch-compile")


def add_emit_flags(parser: argparse.ArgumentParser, formats: tuple[str, ...] = EMIT_FORMATS,
                   what: str = "the fastest layout as a torchtitan TOML, a Megatron-LM "
                   "command line or a DeepSpeed config JSON") -> None:  # fmt: skip
    """``--emit FORMAT`` and ``--emit-file FILE``."""
    parser.add_argument("--emit", choices=formats,
                        help=f"write {what} (read back with --from)")
    parser.add_argument("--emit-file", type=nonempty(), default="-", metavar="FILE",
                        help="where --emit writes (default: standard output, instead of the "
                        "table)")  # fmt: skip


def emit_target(args: argparse.Namespace) -> OutputTarget | None:
    """Where --emit writes, checked before the search (None without --emit)."""
    if args.emit is None:
        return None
    return check_output(args.emit_file, "--emit-file")


def emit_layout(args: argparse.Namespace, target: OutputTarget, shape: Any, layout: Any) -> bool:
    """Write ``layout`` as ``args.emit``; True when it went to standard output."""
    writer = {"torchtitan": torchtitan_text, "megatron": megatron_text,
              "deepspeed": deepspeed_text}[args.emit]  # fmt: skip
    text = writer(args, shape, layout)
    write_output(target, text)
    if args.emit == "deepspeed" and layout.recompute != "none":
        print(f"commatlas plan-llm: note: recompute {layout.recompute} is switched on in the "
              "model code (gradient checkpointing), not in a DeepSpeed config", file=sys.stderr)
    return target.to_stdout


def _model_name(args: argparse.Namespace) -> tuple[str, str] | None:
    """torchtitan's (name, flavor) of a Llama 3 preset, else None."""
    from costmodels.llm.presets import get_preset

    if not args.model:
        return None
    preset = get_preset(args.model).name
    if preset.startswith("Llama 3.1 "):
        return "llama3", preset.removeprefix("Llama 3.1 ")
    return None


def torchtitan_text(args: argparse.Namespace, shape: Any, lay: Any) -> str:
    """A torchtitan TOML ([model] [training] [parallelism] [activation_checkpoint] [compile]
    [quantize.linear.float8])."""
    if args.framework not in _PYTORCH:
        raise ValueError("--emit torchtitan: the plan priced "
                         f"{args.framework} kernels; plan with --framework pytorch")
    if lay.zero == 1 or lay.recompute == "selective":
        raise ValueError(f"--emit torchtitan: torchtitan has no {'ZeRO-1' if lay.zero == 1 else 'Megatron selective recompute'}; plan with --zero-stages 0,2,3 --recompute-modes none,op,full")  # noqa: E501
    name = _model_name(args)
    if name is None:
        raise ValueError("--emit torchtitan: torchtitan flavors are written for Llama 3.1 "
                         "presets (--model llama-3.1-8b/70b/405b)")
    shard = (lay.dp_shard or lay.dp) if lay.zero in (2, 3) else 1
    lines = [f"# commatlas plan-llm --emit torchtitan: the fastest of {args.gpus} GPUs' layouts",
             "[model]", f'name = "{name[0]}"', f'flavor = "{name[1]}"']
    lines += ['converters = ["float8"]'] if args.precision == "fp8" else []
    per_rank = lay.global_batch // lay.dp
    lines += ["", "[training]", f"local_batch_size = {per_rank if lay.pp > 1 else lay.micro_batch}",
              f"global_batch_size = {lay.global_batch}", f"seq_len = {shape.seq_len}"]
    if args.reduce_dtype:
        lines.append(f'mixed_precision_reduce = "{"float32" if args.reduce_dtype == "fp32" else "bfloat16"}"')  # noqa: E501
    lines += ["", "[parallelism]", f"data_parallel_replicate_degree = {lay.dp // shard}",
              f"data_parallel_shard_degree = {shard}", f"tensor_parallel_degree = {lay.tp}",
              f"pipeline_parallel_degree = {lay.pp}", f"context_parallel_degree = {lay.cp}",
              f"expert_parallel_degree = {lay.ep}",
              f"enable_async_tensor_parallel = {str(bool(args.async_tp)).lower()}"]
    keep = lay.zero == 2 or not args.reshard_after_forward
    lines.append(f'fsdp_reshard_after_forward = "{"never" if keep else "always"}"')
    if lay.pp > 1:
        schedule = "Interleaved1F1B" if lay.interleave > 1 else "1F1B"
        lines += [f'pipeline_parallel_schedule = "{schedule}"',
                  f"pipeline_parallel_microbatch_size = {lay.micro_batch}",
                  f"pipeline_parallel_layers_per_stage = "
                  f"{shape.layers // (lay.pp * lay.interleave)}"]
    mode = {"none": '"none"', "full": '"full"', "op": '"selective"'}[lay.recompute]
    if lay.recompute == "full" and lay.recompute_every > 1:
        mode = '"selective"'
    lines += ["", "[activation_checkpoint]", f"mode = {mode}"]
    if lay.recompute == "op":
        lines.append('selective_ac_option = "op"')
    elif lay.recompute == "full" and lay.recompute_every > 1:
        lines.append(f'selective_ac_option = "{lay.recompute_every}"')
    compiled = str(args.framework == "pytorch-compile").lower()
    lines += ["", "[compile]", f"enable = {compiled}", 'components = ["model", "loss"]']
    if args.precision == "fp8":
        lines += ["", "[quantize.linear.float8]",
                  f'recipe_name = "{args.fp8_recipe or "tensorwise"}"',
                  f"enable_fsdp_float8_all_gather = {str(bool(args.fp8_all_gather)).lower()}"]
    return "\n".join(lines) + "\n"


def megatron_text(args: argparse.Namespace, shape: Any, lay: Any) -> str:
    """A Megatron-LM ``torchrun ... pretrain_gpt.py`` command line."""
    if args.framework not in ("megatron", "megatron-legacy", "megatron-fsdp"):
        raise ValueError(f"--emit megatron: the plan priced {args.framework} kernels; plan with "
                         "--framework megatron")
    fsdp = args.framework == "megatron-fsdp"  # its sharding strategy says ZeRO 0-3
    if (lay.zero > 1 and not fsdp) or lay.recompute == "op" or lay.recompute_every > 1:
        raise ValueError("--emit megatron: Megatron-LM shards with the distributed optimizer "
                         "(ZeRO 1) and recomputes full or selective every layer; plan with "
                         "--zero-stages 0,1 --recompute-modes none,selective,full")
    for field in ("head_dim", "mla", "dense_ffn", "mamba"):  # mamba: issue 39's hybrids
        if getattr(shape, field) is not None:
            raise ValueError(f"--emit megatron: the model's {field} is not written as flags here")
    gpus, per_node = lay.tp * lay.pp * lay.dp * lay.cp, args.gpus_per_node
    nodes, per_node = (gpus // per_node, per_node) if gpus % per_node == 0 else (1, gpus)
    words = ["torchrun", "--nnodes", nodes, "--nproc_per_node", per_node, "pretrain_gpt.py",
             "--tensor-model-parallel-size", lay.tp, "--pipeline-model-parallel-size", lay.pp,
             "--context-parallel-size", lay.cp, "--expert-model-parallel-size", lay.ep,
             "--micro-batch-size", lay.micro_batch, "--global-batch-size", lay.global_batch,
             "--num-layers", shape.layers, "--hidden-size", shape.hidden,
             "--num-attention-heads", shape.heads, "--ffn-hidden-size", shape.ffn,
             "--seq-length", shape.seq_len, "--max-position-embeddings", shape.seq_len,
             "--vocab-size", shape.vocab]
    if shape.kv_heads and shape.kv_heads != shape.heads:
        words += ["--group-query-attention", "--num-query-groups", shape.kv_heads]
    words += ["--swiglu"] if shape.gated_mlp else []
    words += [] if shape.tied_embeddings else ["--untie-embeddings-and-output-weights"]
    if shape.experts > 1:
        words += ["--num-experts", shape.experts, "--moe-router-topk", shape.top_k]
    if lay.interleave > 1:
        words += ["--virtual-pipeline-model-parallel-size", lay.interleave]
    words += _megatron_layout_extras(args, lay)
    words += ["--sequence-parallel"] if lay.sequence_parallel else []
    words += _megatron_fsdp_words(args, lay) if fsdp else (
        ["--use-distributed-optimizer"] if lay.zero == 1 else [])
    words += ["--fp16"] if args.precision == "fp16" else ["--bf16"]
    if args.precision == "fp8":
        words += ["--fp8-format", "hybrid", "--fp8-recipe", args.fp8_recipe or "delayed"]
        words += ["--fp8-param-gather"] if args.fp8_all_gather else []
    words += ["--grad-reduce-in-bf16"] if args.reduce_dtype == "bf16" else []
    words += ["--tp-comm-overlap"] if args.async_tp else []
    if lay.recompute != "none":
        words += ["--recompute-granularity", lay.recompute]
    words += ["--use-legacy-models"] if args.framework == "megatron-legacy" else []
    text = shlex.join(str(word) for word in words)
    return "# commatlas plan-llm --emit megatron\n" + text.replace(" --", " \\\n    --") + "\n"


def _megatron_layout_extras(args: argparse.Namespace, lay: Any) -> list[Any]:
    """Issue 39's layout words as Megatron-LM spells them (the reader reads them back): ETP,
    uneven first/last stages, the MoE dispatcher (flex with its backend) and CUDA graphs."""
    words: list[Any] = []
    if getattr(lay, "etp", 0):
        words += ["--expert-tensor-parallel-size", lay.etp]
    if getattr(lay, "first_stage_layers", 0):
        words += ["--decoder-first-pipeline-num-layers", lay.first_stage_layers]
    if getattr(lay, "last_stage_layers", 0):
        words += ["--decoder-last-pipeline-num-layers", lay.last_stage_layers]
    dispatcher = getattr(args, "moe_dispatcher", None)
    if dispatcher == "alltoall":
        words += ["--moe-token-dispatcher-type", "alltoall"]
    elif dispatcher in ("deepep", "hybridep"):
        words += ["--moe-token-dispatcher-type", "flex", "--moe-flex-dispatcher-backend",
                  dispatcher]  # fmt: skip
    words += ["--enable-cuda-graph"] if getattr(args, "cuda_graphs", False) else []
    return words


def _megatron_fsdp_words(args: argparse.Namespace, lay: Any) -> list[Any]:
    """Megatron-FSDP as Megatron-LM spells it (costmodels/llm/framework_dp.py)."""
    strategy = ("no_shard", "optim", "optim_grads", "optim_grads_params")[lay.zero]
    words: list[Any] = ["--use-megatron-fsdp", "--data-parallel-sharding-strategy", strategy,
                        "--ckpt-format", "fsdp_dtensor"]  # fmt: skip
    if getattr(args, "fsdp_unit_size", None):
        words += ["--suggested-communication-unit-size", args.fsdp_unit_size]
    return words + (["--fsdp-double-buffer"] if getattr(args, "fsdp_double_buffer", None) else [])


def deepspeed_text(args: argparse.Namespace, shape: Any, lay: Any) -> str:
    """A DeepSpeed config JSON (batch, precision, ZeRO stage)."""
    if lay.tp * lay.pp * lay.cp * lay.ep > 1 or lay.dp_shard:
        raise ValueError("--emit deepspeed: DeepSpeed alone is data-parallel (ZeRO); the plan "
                         "uses TP/PP/CP/EP or HSDP; plan with --cp 1 --ep 1 on a model that "
                         "fits one GPU per rank")
    if args.framework != "deepspeed" or args.precision == "fp8":
        raise ValueError("--emit deepspeed: plan with --framework deepspeed and bf16 or fp16")
    from commatlas.llm_framework_args import framework_recipe_fields
    from costmodels.llm.deepspeed_config import DEFAULT_DEEPSPEED

    knobs = framework_recipe_fields(args).get("deepspeed", DEFAULT_DEEPSPEED)
    zero: dict[str, Any] = {"stage": lay.zero, "overlap_comm": knobs.overlaps(lay.zero),
                            "contiguous_gradients": knobs.contiguous_gradients,
                            "reduce_bucket_size": knobs.reduce_bucket_size,
                            "allgather_bucket_size": knobs.allgather_bucket_size}  # fmt: skip
    if lay.zero == 3:
        zero |= {f"stage3_{k}": getattr(knobs, k) for k in (
            "prefetch_bucket_size", "param_persistence_threshold", "max_live_parameters",
            "max_reuse_distance")}  # fmt: skip
    config: dict[str, Any] = {
        "train_batch_size": lay.global_batch,
        "train_micro_batch_size_per_gpu": lay.micro_batch,
        "gradient_accumulation_steps": lay.global_batch // (lay.micro_batch * lay.dp),
        args.precision: {"enabled": True},
        "zero_optimization": zero,
    }
    return json.dumps(config, indent=2) + "\n"
