"""``plan-serving --emit vllm|sglang`` (issue 41): the best deployment that meets the targets
written as the engine's serve command, with the flags the serve-command reader reads
(commatlas.job_files.serve_command), so ``predict-serving --from`` prices the same deployment.

The model is written as its preset name in Hugging Face spelling (``Llama-3.1-70B``), or the
folder of ``--hf-config``; a comment says to put the checkpoint's id or path there.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any

from commatlas.job_files.emit import add_emit_flags
from costmodels.safe_output import OutputTarget, write_output

SERVING_FORMATS = ("vllm", "sglang", "trtllm")


def add_serving_emit_flags(parser: argparse.ArgumentParser) -> None:
    """``--emit vllm|sglang`` and ``--emit-file FILE`` on plan-serving."""
    add_emit_flags(parser, SERVING_FORMATS, "the best deployment that meets the targets as a "
                   "vLLM or SGLang serve command or TensorRT-LLM LLM-API options YAML")  # fmt: skip


def serve_text(args: argparse.Namespace, rows: list[Any]) -> str:
    """The serve command of the first deployment that meets the targets."""
    row = next((r for r in rows if r.feasible), None)
    if row is None:
        raise ValueError(f"--emit {args.emit}: no deployment meets the targets; nothing to write")
    if args.hf_config:
        model = str(Path(args.hf_config).parent)
    elif args.model:
        from costmodels.llm.presets import get_preset

        model = get_preset(args.model).name.replace(" ", "-")
    else:
        raise ValueError(f"--emit {args.emit}: the model is shape flags; give --model or "
                         "--hf-config so the command names a checkpoint")
    quant = {"fp8": "fp8", "fp4": "modelopt_fp4"}.get(row.precision)
    dtype = {"bf16": "bfloat16", "fp16": "float16"}.get(row.precision)
    if args.emit == "trtllm":
        return _trtllm_yaml(args, row, model)
    if args.emit == "vllm":
        words = ["vllm", "serve", model, "--tensor-parallel-size", row.tp,
                 "--pipeline-parallel-size", row.pp]  # fmt: skip
        if row.ep > 1:
            words += ["--data-parallel-size", row.ep // row.tp, "--enable-expert-parallel"]
            if args.moe_a2a_backend == "deepep":  # the decode kernels (vLLM: one backend)
                words += ["--all2all-backend", "deepep_low_latency"]
        words += ["--quantization", quant] if quant else ["--dtype", dtype]
        words += ["--kv-cache-dtype", "fp8"] if row.kv_precision == "fp8" else []
        words += _knobs(args, ("--max-num-seqs", "--max-num-batched-tokens", "--block-size"))
        words += ["--enable-prefix-caching"] if args.prefix_caching else []
        words += ["--no-enable-chunked-prefill"] if args.no_chunked_prefill else []
    else:
        # SGLang's --tp counts every GPU of the instance; EP wider than TP is DP attention
        wide = max(row.tp, row.ep)
        words = ["python", "-m", "sglang.launch_server", "--model-path", model, "--tp", wide,
                 "--pp-size", row.pp]  # fmt: skip
        if row.ep > row.tp:
            words += ["--dp", row.ep // row.tp, "--enable-dp-attention"]
        words += ["--ep-size", row.ep] if row.ep > 1 else []
        if row.ep > 1 and args.moe_a2a_backend == "deepep":  # normal / low-latency by batch
            words += ["--moe-a2a-backend", "deepep", "--deepep-mode", "auto"]
        words += ["--quantization", quant] if quant else ["--dtype", dtype]
        words += ["--kv-cache-dtype", "fp8_e4m3"] if row.kv_precision == "fp8" else []
        words += _knobs(args, ("--max-running-requests", "--chunked-prefill-size",
                               "--page-size"))
    head = (f"# commatlas plan-serving --emit {args.emit}: {row.gpu}, {row.gpus} GPUs per "
            f"instance; put your checkpoint's Hugging Face id or path in place of {model}")
    return head + "\n" + shlex.join(str(word) for word in words) + "\n"


def _knobs(args: argparse.Namespace, flags: tuple[str, str, str]) -> list[Any]:
    """The scheduler caps given to plan-serving, in the engine's spelling (sequences, token
    budget, block size); a cap left to the engine's defaults (issue 38's presets) is not
    written, so the engine, read back with the same preset, applies the same default."""
    values = (args.max_num_seqs, args.max_batched_tokens, args.block_size)
    return [word for flag, value in zip(flags, values, strict=True) if value is not None
            for word in (flag, value)]


def emit_deployment(args: argparse.Namespace, target: OutputTarget, rows: list[Any]) -> bool:
    """Write the serve command; True when it went to standard output."""
    write_output(target, serve_text(args, rows))
    return target.to_stdout


def _trtllm_yaml(args: argparse.Namespace, row: Any, model: str) -> str:
    """TensorRT-LLM's options YAML: EP wider than TP is attention DP (attention TP 1)."""
    if row.ep > row.tp > 1:
        raise ValueError(f"--emit trtllm: TP {row.tp} with EP {row.ep} has no TensorRT-LLM "
                         "spelling (attention DP runs attention TP 1); plan with --tp 1 or "
                         "--ep 1")
    lines = [f"# commatlas plan-serving --emit trtllm: {row.gpu}, {row.gpus} GPUs per instance, "
             f"{row.precision} weights (the checkpoint's); run: trtllm-serve {model} "
             "--extra_llm_api_options THIS_FILE",
             f"tensor_parallel_size: {max(row.tp, row.ep)}",
             f"pipeline_parallel_size: {row.pp}",
             f"moe_expert_parallel_size: {row.ep}",
             f"enable_attention_dp: {str(row.ep > row.tp).lower()}",
             *([f"max_batch_size: {args.max_num_seqs}"] if args.max_num_seqs else []),
             *([f"max_num_tokens: {args.max_batched_tokens}"] if args.max_batched_tokens
               else []),
             "kv_cache_config:",
             f"  dtype: {'fp8' if row.kv_precision == 'fp8' else 'auto'}",
             *([f"  tokens_per_block: {args.block_size}"] if args.block_size else []),
             f"  enable_block_reuse: {str(bool(args.prefix_caching)).lower()}"]  # fmt: skip
    return "\n".join(lines) + "\n"
