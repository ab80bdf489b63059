"""The request and engine flags of ``predict-serving --mode`` and ``plan-serving``, and what they
resolve to (costmodels.serving.requests.RequestSet, costmodels.serving.engine_presets
.EngineSettings).

Request flags: ``--requests N``, ``--concurrency N`` (a closed loop), ``--dataset random
[--random-range-ratio R]`` (vLLM's random lengths), ``--prompt-len L`` or
``--prompt-dist FILE``, ``--output-len L`` or ``--output-dist FILE`` (a file of lengths, drawn
with replacement), ``--prefix-len N`` (a prompt prefix every request shares), ``--seed S`` (a
private numpy Generator). Engine flags: ``--engine vllm|sglang|trtllm [--engine-version V]``
(costmodels.serving.engine_presets: every knob at that engine's default, a knob given wins),
``--max-num-seqs``, ``--max-batched-tokens``, ``--block-size``, ``--policy live|reserve``,
``--no-chunked-prefill``, ``--priority decode|prefill``, ``--prefix-caching``. Every count is
bounded by argparse (one line naming the flag, exit 2); the rules between flags raise ValueError
naming them.
"""

from __future__ import annotations

import argparse
from typing import Any

from commatlas.cli_types import bounded_int, nonempty
from costmodels.limits import MAX_BATCH, MAX_SEQUENCE

MAX_REQUESTS = 100_000  # costmodels.serving.requests.MAX_REQUESTS
MAX_TOKEN_BUDGET = 2**20


def add_request_flags(
    parser: argparse.ArgumentParser,
    default_requests: int,
    max_requests: int = MAX_REQUESTS,
) -> None:
    group = parser.add_argument_group("requests")
    length = bounded_int(1, MAX_SEQUENCE)
    group.add_argument(
        "--requests",
        type=bounded_int(1, max_requests),
        default=default_requests,
        help=f"requests simulated (default {default_requests:,})",
    )
    group.add_argument("--prompt-len", type=length, help="prompt tokens of every request")
    group.add_argument(
        "--prompt-dist",
        type=nonempty(),
        metavar="FILE",
        help="prompt lengths to draw from (whole numbers, one per line)",
    )
    group.add_argument("--output-len", type=length, help="generated tokens of every request")
    group.add_argument(
        "--output-dist",
        type=nonempty(),
        metavar="FILE",
        help="output lengths to draw from (whole numbers, one per line)",
    )
    group.add_argument(
        "--prefix-len",
        type=bounded_int(0, MAX_SEQUENCE),
        default=0,
        help="prompt tokens every request shares (a system prompt)",
    )
    group.add_argument(
        "--dataset",
        type=_dataset,
        help="random: vllm bench serve's random dataset, lengths drawn uniformly within "
        "--random-range-ratio of --prompt-len/--output-len (default 1024/128); ShareGPT's "
        "lengths are not shipped (no verifiable public length statistics were found)",
    )
    group.add_argument(
        "--random-range-ratio",
        type=float,
        default=0.0,
        help="with --dataset random: lengths within L x (1 -/+ ratio), ratio in [0, 1) "
        "(default 0, vLLM's)",
    )
    group.add_argument(
        "--concurrency",
        type=bounded_int(1, max_requests),
        help="closed loop: N users, each sending its next request when the last one "
        "finishes (AIPerf, vllm bench serve --max-concurrency); instead of --rate",
    )
    group.add_argument(
        "--seed",
        type=bounded_int(0, 2**32 - 1),
        default=0,
        help="seed of the arrivals and length draws",
    )


def add_engine_flags(parser: argparse.ArgumentParser) -> None:
    from costmodels.serving.engine_presets import DEFAULT_ENGINE, ENGINES, VERSIONS

    group = parser.add_argument_group(
        "engine (continuous batching, paged KV cache; --engine sets every knob below to that "
        "engine's defaults, a flag given wins)"
    )
    group.add_argument("--engine", choices=ENGINES, default=DEFAULT_ENGINE,
                       help=f"serving engine whose defaults to use (default {DEFAULT_ENGINE})")
    group.add_argument("--engine-version", choices=sorted({v for vs in VERSIONS.values()
                                                           for v in vs}),
                       help="engine version where its defaults changed (default the newest: "
                       + ", ".join(f"{k} {v[0]}" for k, v in VERSIONS.items()) + ")")
    group.add_argument("--max-num-seqs", type=bounded_int(1, MAX_BATCH),
                       help="sequences scheduled together at most (default: the engine's)")
    group.add_argument("--max-batched-tokens", type=bounded_int(1, MAX_TOKEN_BUDGET),
                       help="token budget of one iteration (default: the engine's)")
    group.add_argument("--block-size", type=bounded_int(1, 4096),
                       help="tokens per KV block (default: the engine's)")
    group.add_argument(
        "--policy",
        choices=("live", "reserve"),
        help="live: blocks as the context grows, preempt when out (vLLM, SGLang); "
        "reserve: a request starts only when its whole output fits "
        "(TensorRT-LLM's GUARANTEED_NO_EVICT) (default: the engine's)",
    )
    group.add_argument("--cuda-graph-max-tokens", type=bounded_int(0, MAX_TOKEN_BUDGET),
                       help="largest iteration (tokens) replayed from a CUDA graph; larger ones "
                       "launch their kernels from the host (default: the engine's; vLLM 0.10: "
                       "min(2 x max-num-seqs, 512))")
    group.add_argument("--no-chunked-prefill", action="store_true",
                       help="run every prompt whole in one iteration")
    group.add_argument("--priority", choices=("decode", "prefill"),
                       help="decode: decodes first, prompt chunks fill the budget (vLLM V1, "
                       "TensorRT-LLM); prefill: an iteration with prompt work runs no decodes "
                       "(vLLM V0, SGLang) (default: the engine's)")
    group.add_argument("--disable-custom-all-reduce", action="store_true",
                       help="TP all-reduces through NCCL/RCCL, not the engine's own kernel")
    group.add_argument("--moe-a2a-backend", choices=("alltoall", "deepep"), default="alltoall",
                       help="how tokens reach their experts with --ep > 1: alltoall (the "
                       "engines' default collectives) or deepep (DeepEP: low-latency kernels "
                       "for decode, normal ones for prefill; SGLang --moe-a2a-backend deepep, "
                       "vLLM --all2all-backend deepep_*)")
    group.add_argument(
        "--prefix-caching",
        action="store_true",
        help="compute and store the shared --prefix-len once",
    )


def _dataset(text: str) -> str:
    """--dataset's value; ShareGPT is refused with why and what to give instead."""
    if text.strip().lower() == "sharegpt":  # however it is spelled (ShareGPT, sharegpt)
        raise argparse.ArgumentTypeError(
            "sharegpt is not shipped: no verifiable public length statistics of the filtered "
            "ShareGPT set benchmark tools sample were found; give your sample's lengths with "
            "--prompt-dist/--output-dist, or use --dataset random")
    if text != "random":
        raise argparse.ArgumentTypeError(f"must be random, got {text!r}")
    return text


def engine_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The EngineConfig fields the user's flags set (None: the engine's default); ValueError
    for --cuda-graph-max-tokens beside --eager (no graphs at all: the limit would be dropped)."""
    if getattr(args, "eager", False) and getattr(args, "cuda_graph_max_tokens", None) is not None:
        raise ValueError("--cuda-graph-max-tokens sets the largest iteration replayed from a CUDA "
                         "graph; --eager runs none (give one of the two)")  # fmt: skip
    return {
        "max_num_seqs": args.max_num_seqs,
        "max_batched_tokens": args.max_batched_tokens,
        "block_size": args.block_size,
        "cuda_graph_max_tokens": getattr(args, "cuda_graph_max_tokens", None),
        "policy": args.policy,
        "chunked_prefill": False if args.no_chunked_prefill else None,
        "prefill_first": None if args.priority is None else args.priority == "prefill",
        "prefix_caching": True if args.prefix_caching else None,
    }


def engine_settings_for(args: argparse.Namespace, shape: Any, layout: Any, cluster: Any,
                        requests: Any, mode: str) -> Any:  # fmt: skip
    """The engine preset of ``--engine`` for this deployment and request set, flags on top."""
    from costmodels.serving.engine_presets import engine_settings

    prompt, output = mean_lengths(requests)
    longest = int((requests.prompt + requests.output).max())
    return engine_settings(args.engine, args.engine_version, shape=shape, layout=layout,
                           cluster=cluster, mode=mode, prompt_len=prompt, output_len=output,
                           longest=longest, overrides=engine_overrides(args))  # fmt: skip


def _lengths(args: argparse.Namespace, name: str) -> tuple[int | None, Any]:
    from costmodels.serving.requests import read_lengths

    fixed, dist = getattr(args, f"{name}_len"), getattr(args, f"{name}_dist")
    flag = f"--{name}-len"
    if fixed is not None and dist is not None:
        raise ValueError(f"give {flag} or --{name}-dist, not both")
    if fixed is None and dist is None:
        raise ValueError(f"{flag} (or --{name}-dist FILE) is required")
    return fixed, read_lengths(dist, f"--{name}-dist") if dist is not None else None


def request_set(args: argparse.Namespace, mode: str, rate: float | None) -> Any:
    """The RequestSet the flags describe (``rate`` or ``--concurrency`` for
    ``mode="server"``)."""
    from costmodels.serving.requests import make_requests

    ratio = getattr(args, "random_range_ratio", 0.0)
    if getattr(args, "dataset", None) == "random":
        args.prompt_len = 1024 if args.prompt_len is None and args.prompt_dist is None else (
            args.prompt_len)  # fmt: skip
        args.output_len = 128 if args.output_len is None and args.output_dist is None else (
            args.output_len)  # fmt: skip
    elif ratio:
        raise ValueError("--random-range-ratio needs --dataset random")
    prompt, prompt_dist = _lengths(args, "prompt")
    output, output_dist = _lengths(args, "output")
    return make_requests(
        args.requests,
        mode=mode,
        rate=rate,
        prompt_len=prompt,
        output_len=output,
        prompt_dist=prompt_dist,
        output_dist=output_dist,
        prefix_len=args.prefix_len,
        seed=args.seed,
        concurrency=getattr(args, "concurrency", None),
        range_ratio=ratio,
    )


def mean_lengths(requests: Any) -> tuple[int, int]:
    """Whole-token mean prompt and output lengths of a request set (for the static answers)."""
    return max(1, round(float(requests.prompt.mean()))), max(
        1, round(float(requests.output.mean()))
    )
