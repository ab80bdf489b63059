"""``commatlas predict-serving``: prefill and decode of one model on a TP x PP (x EP) instance.

Flags (issue 19): predict-llm's model flags (``--model``, ``--hf-config`` or the shape flags; the
sequence is the prompt plus the output, so there is no ``--seq-len``), ``--gpu``, ``--tp [--pp]
[--ep] --batch B --prompt-len P --output-len O [--disaggregated --prefill-gpus N --decode-gpus M
--transfer-link ...] --json``. ``--json`` prints one object with ``ttft_s``, ``tpot_s``,
``tokens_per_s_per_gpu``, ``kv_cache_bytes_per_token``, ``kv_transfer_s``,
``memory_per_gpu_bytes`` and the rest of costmodels.serving.ServingPrediction, plus what was
assumed (model, shape, gpu, layout, request, cluster). Bad input exits 2 with one line naming
the flag; the work lives in costmodels.serving.

Issue 29 adds the engine: ``--mode offline|server [--rate R] --requests N`` (lengths fixed or
``--prompt-dist``/``--output-dist`` files) with the engine flags of commatlas.serving_args
simulates requests through continuous batching and paged KV memory
(costmodels.serving.simulate); ``--batch`` is then optional (the engine decides; the static
answers above are given at ``--batch``, default 1: a single request). JSON adds
``output_tokens_per_s``, ``output_tokens_per_s_per_gpu``, ``ttft_p50_s``, ``ttft_p90_s``,
``ttft_p99_s``, ``tpot_p50_s``, ``tpot_p99_s``, ``e2e_p50_s``, ``e2e_p99_s``,
``max_concurrency_in_memory`` and a ``simulation`` object (engine, iterations, preemptions, KV
pool, assumptions); with ``--disaggregated`` the prefill and decode pools are simulated with the
same requests (costmodels.serving.disaggregated) under ``pools_simulation``.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from typing import Any

from commatlas.cli_types import bounded_int, nonempty, positive_float
from commatlas.job_files.apply import add_from_flag, apply_job_file, job_file_lines
from commatlas.llm_args import add_cluster_flags, add_model_flags
from commatlas.llm_commands import cluster_and_source
from commatlas.serving_args import add_engine_flags, add_request_flags
from costmodels.limits import MAX_BATCH, MAX_GPUS
from costmodels.safe_output import json_text

PRECISIONS = ("bf16", "fp16", "fp8", "fp4")  # costmodels.serving.precision.SERVING_PRECISIONS

SHAPE_KEYS = ("layers", "hidden", "heads", "ffn", "vocab", "kv_heads", "gated_mlp",
              "tied_embeddings", "experts", "top_k", "head_dim", "mlp", "position")  # fmt: skip
KV_PRECISIONS = ("bf16", "fp16", "fp8")
DEFAULT_TRANSFER = "InfiniBand NDR"
# requests per simulation: p99 then rests on the 20 slowest (its sampling error a few %; the
# verdict of a plan-serving row no longer flips between 300 and 500 requests)
DEFAULT_REQUESTS = 2000


def add_serving_flags(parser: argparse.ArgumentParser) -> None:
    add_model_flags(parser)
    count = bounded_int(1, MAX_GPUS)
    cluster = parser.add_argument_group("cluster")
    add_cluster_flags(cluster, gpu_default="h100")
    cluster.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="bf16",
        help="weights and GEMMs (fp8: 1-byte weights at the fp8 peak; fp4: NVFP4, Blackwell)",
    )
    cluster.add_argument(
        "--kv-precision",
        choices=KV_PRECISIONS,
        help="bytes per cached key/value element (fp8 halves the cache; default: the engine's "
        "rule, costmodels.serving.engine_presets.kv_precision_for: fp8 for an fp8/fp4 "
        "checkpoint on trtllm, else 16-bit)",
    )
    cluster.add_argument(
        "--eager", action="store_true", help="no CUDA graphs: every kernel pays the eager host cost"
    )
    layout = parser.add_argument_group("layout and request")
    layout.add_argument("--tp", type=count, required=True, help="tensor-parallel degree")
    layout.add_argument("--pp", type=count, default=1, help="pipeline stages")
    layout.add_argument("--ep", type=count, default=1,
                        help="expert-parallel degree (MoE; a multiple of --tp: ep/tp attention "
                        "groups share the experts)")  # fmt: skip
    layout.add_argument("--batch", type=bounded_int(1, MAX_BATCH),
                        help="sequences decoded together (required without --mode; with it, "
                        "the static answers' batch, default 1)")  # fmt: skip
    sim = parser.add_argument_group("request simulation (continuous batching)")
    sim.add_argument("--mode", choices=("offline", "server"),
                     help="simulate requests: all at once (offline), or Poisson arrivals at "
                     "--rate or a closed loop of --concurrency users (server)")  # fmt: skip
    sim.add_argument("--rate", type=positive_float, help="requests per second (--mode server)")
    add_request_flags(parser, default_requests=DEFAULT_REQUESTS)
    add_engine_flags(parser)
    pools = parser.add_argument_group("disaggregated prefill and decode")
    pools.add_argument(
        "--disaggregated",
        action="store_true",
        help="prefill and decode on separate GPU pools (KV cache moves between)",
    )
    pools.add_argument("--prefill-gpus", type=count, help="GPUs of the prefill pool "
                       "(default: one instance)")  # fmt: skip
    pools.add_argument("--decode-gpus", type=count, help="GPUs of the decode pool "
                       "(default: one instance)")  # fmt: skip
    pools.add_argument("--transfer-link", type=nonempty(64),
                       help=f"path of each prefill GPU's KV shard: nvlink, a link preset "
                       f"(default {DEFAULT_TRANSFER!r}, 'RoCE 400', '100 GbE' for TCP) or a "
                       "bandwidth per GPU")  # fmt: skip
    pools.add_argument(
        "--transfer-mode",
        choices=("whole", "layer-wise"),
        default="whole",
        help="send the cache after prefill, or layer by layer during it",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")


def _pools(args: argparse.Namespace, gpus: int, gpu: Any) -> Any:
    from costmodels.serving import Pools, transfer_link

    given = [flag for flag, value in (("--prefill-gpus", args.prefill_gpus),
             ("--decode-gpus", args.decode_gpus), ("--transfer-link", args.transfer_link))
             if value is not None]  # fmt: skip
    if not args.disaggregated:
        if given:
            raise ValueError(f"{given[0]} needs --disaggregated")
        return None
    link = transfer_link(args.transfer_link or DEFAULT_TRANSFER, gpu)
    return Pools(args.prefill_gpus or gpus, args.decode_gpus or gpus, link, args.transfer_mode)


def _check_request_flags(args: argparse.Namespace) -> None:
    if args.concurrency is not None:
        if args.mode == "offline" or args.rate is not None:
            raise ValueError("--concurrency is a server load of its own: not with --rate or "
                             "--mode offline")  # fmt: skip
        if args.disaggregated:
            raise ValueError("--concurrency is not simulated with --disaggregated (use --rate)")
        args.mode = "server"
    if args.mode is None:
        extra = [flag for flag, value in (("--rate", args.rate),
                 ("--prompt-dist", args.prompt_dist), ("--output-dist", args.output_dist))
                 if value is not None]  # fmt: skip
        if extra:
            raise ValueError(f"{extra[0]} needs --mode (offline or server)")
        for flag, value in (("--batch", args.batch), ("--prompt-len", args.prompt_len),
                            ("--output-len", args.output_len)):  # fmt: skip
            if value is None:
                raise ValueError(f"{flag} is required (or give --mode to simulate requests)")
    elif args.mode == "server" and args.rate is None and args.concurrency is None:
        raise ValueError("--mode server needs --rate R (requests per second) or --concurrency N")


def predict_serving_command(args: argparse.Namespace) -> int:
    from commatlas.serving_args import engine_settings_for, mean_lengths, request_set
    from costmodels.llm.shape_inputs import SHAPE_FLAGS
    from costmodels.serving import ServingLayout, predict_serving
    from costmodels.serving.engine_presets import custom_allreduce_for, kv_precision_for
    from costmodels.serving.precision import check_gpu_supports
    from costmodels.serving.shape_inputs import resolve_serving_shape

    try:
        apply_job_file(args, "predict-serving")  # --from a vLLM / SGLang command (issue 41)
        _check_request_flags(args)
        requests = request_set(args, args.mode, args.rate) if args.mode else None
        prompt_len, output_len = (mean_lengths(requests) if requests is not None
                                  else (args.prompt_len, args.output_len))  # fmt: skip
        longest = (int((requests.prompt + requests.output).max()) if requests is not None
                   else prompt_len + output_len)  # fmt: skip
        overrides = {key: getattr(args, key) for key in SHAPE_KEYS}
        overrides["seq_len"] = longest
        names = {**SHAPE_FLAGS, "seq_len": "--prompt-len + --output-len"}
        resolved = resolve_serving_shape(model=args.model, hf_config=args.hf_config,
                                         overrides=overrides, names=names)  # fmt: skip
        cluster, intra_source = cluster_and_source(args)
        check_gpu_supports(cluster.gpu, args.precision)
        kv = kv_precision_for(args.engine, args.precision, args.kv_precision)
        layout = ServingLayout(args.tp, args.pp, args.ep, args.precision, kv, not args.eager,
                               custom_allreduce_for(args.engine,
                                                    args.disable_custom_all_reduce),
                               args.moe_a2a_backend)  # fmt: skip
        pools = _pools(args, layout.gpus, cluster.gpu)
        settings = engine_settings_for(args, resolved.shape, layout, cluster, requests
                                       or _one(prompt_len, output_len), args.mode or "server")
        prediction = predict_serving(
            resolved.shape, layout, cluster, batch=args.batch or 1, prompt_len=prompt_len,
            output_len=output_len, pools=pools, engine=settings.config,
        )  # fmt: skip
        simulated = (_simulate(args, resolved.shape, layout, cluster, requests, pools,
                               settings.config) if requests is not None else {})  # fmt: skip
    except ValueError as exc:  # ShapeError, ServingLayoutError, UnitParseError, ConfigError ...
        print(f"commatlas predict-serving: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    out = {**asdict(prediction), **simulated, "model": resolved.source,
           "shape": asdict(resolved.shape),
           "gpu": {"name": cluster.gpu.name, "memory_bandwidth_Bps":
                   cluster.gpu.memory_bandwidth_Bps, "memory_bytes": cluster.gpu.memory_bytes},
           "layout": asdict(layout) | {"gpus": layout.gpus},
           "engine": settings.echo(),
           "request": {"batch": args.batch or 1, "prompt_len": prompt_len,
                       "output_len": output_len, "mode": args.mode},
           "cluster": {"gpus_per_node": cluster.gpus_per_node,
                       "intra_bandwidth_Bps": cluster.intra_bandwidth_Bps,
                       "intra_source": intra_source,
                       "inter_bandwidth_Bps": cluster.inter_bandwidth_Bps}}  # fmt: skip
    if args.job_file_report:
        out["job_file"] = args.job_file_report
    print(json_text(out) if args.json else "\n".join([_text(out), *job_file_lines(args)]))
    return 0


def _one(prompt_len: int, output_len: int) -> Any:
    from costmodels.serving.requests import make_requests

    return make_requests(1, prompt_len=prompt_len, output_len=output_len)


def _simulate(args: argparse.Namespace, shape: Any, layout: Any, cluster: Any, requests: Any,
              pools: Any, engine: Any) -> dict[str, Any]:  # fmt: skip
    """The simulation's JSON keys (module docstring)."""
    from costmodels.serving.simulate import simulate_serving

    result = asdict(simulate_serving(shape, layout, cluster, requests, engine))
    keys = ("output_tokens_per_s", "output_tokens_per_s_per_gpu", "ttft_p50_s", "ttft_p90_s",
            "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "e2e_p50_s", "e2e_p99_s",
            "max_concurrency_in_memory")  # fmt: skip
    out: dict[str, Any] = {key: result.pop(key) for key in keys}
    out["simulation"] = {**result, "mode": args.mode, "rate": args.rate,
                         "concurrency": args.concurrency, "seed": args.seed,
                         "percentiles_from_requests": result["requests"]}  # fmt: skip
    if pools is not None:
        from costmodels.serving.disaggregated import simulate_pools

        out["pools_simulation"] = asdict(simulate_pools(shape, layout, cluster, requests, engine,
                                                        pools))  # fmt: skip
    return out


def _text(out: dict[str, Any]) -> str:
    ms = 1e3
    lines = [
        f"{out['model']}: {out['layout']['gpus']} x {out['gpu']['name']} per instance "
        f"(TP {out['layout']['tp']}, PP {out['layout']['pp']}, EP {out['layout']['ep']}), "
        f"{out['layout']['precision']} weights, {out['layout']['kv_precision']} KV cache",
        f"time to first token        {out['ttft_s'] * ms:.4g} ms",
        f"time per output token      {out['tpot_s'] * ms:.4g} ms (static, batch "
        f"{out['request']['batch']})",
        f"tokens/s per GPU           {out['tokens_per_s_per_gpu']:.4g}",
        f"KV cache per token         {out['kv_cache_bytes_per_token'] / 2**10:.4g} KiB",
        f"memory per GPU             {out['memory_per_gpu_bytes'] / 2**30:.4g} GiB"
        + ("" if out["fits"] else " (does NOT fit)"),
        f"prefill:decode GPU ratio   {out['prefill_decode_gpu_ratio']:.3g}",
        _engine_line(out["engine"]),
    ]
    regime = out["decode_tp_allreduce"]
    if regime["algorithm"] != "none":
        lines.append(f"decode TP all-reduce       {regime['bytes'] / 1e3:.3g} kB, "
                     f"{'NCCL ' if regime['algorithm'] != 'custom' else ''}"
                     f"{regime['algorithm']}/{regime['protocol']}, "
                     f"{regime['seconds'] * 1e6:.3g} us ({regime['latency_s'] * 1e6:.3g} us "
                     "latency)")  # fmt: skip
    if "output_tokens_per_s" in out:
        sim = out["simulation"]
        load = (f"{sim['concurrency']} concurrent users" if sim["concurrency"] else
                f"{sim['rate']:g} req/s" if sim["rate"] else "all at once")  # fmt: skip
        lines.append(f"simulated ({out['request']['mode']}, {load}, percentiles over "
                     f"{sim['requests']:,} requests): "
                     f"{out['output_tokens_per_s']:.4g} output tokens/s "
                     f"({out['output_tokens_per_s_per_gpu']:.4g} per GPU), TTFT p50/p90/p99 "
                     f"{out['ttft_p50_s'] * ms:.4g}/{out['ttft_p90_s'] * ms:.4g}/"
                     f"{out['ttft_p99_s'] * ms:.4g} ms, TPOT p50/p99 {out['tpot_p50_s'] * ms:.4g}/"
                     f"{out['tpot_p99_s'] * ms:.4g} ms, up to {out['max_concurrency_in_memory']} "
                     f"sequences in memory, {sim['preemptions']} preemptions")  # fmt: skip
    if out["pools"]:
        lines.append(f"KV transfer                {out['kv_transfer_s'] * ms:.4g} ms "
                     f"({out['kv_transfer_exposed_s'] * ms:.4g} ms exposed); pools sustain "
                     f"{out['pools']['requests_per_s']:.4g} requests/s, "
                     f"{out['pools']['bottleneck']} bound")  # fmt: skip
    return "\n".join(lines)


def _graphs(e: dict[str, Any]) -> str:
    limit = e.get("cuda_graph_max_tokens")
    if not e["cuda_graphs"] or limit == 0:
        return "eager"
    return "CUDA graphs" if limit is None else f"CUDA graphs up to {limit} tokens"


def _engine_line(e: dict[str, Any]) -> str:
    flags = f" (set by flags: {', '.join(e['set_by_flags'])})" if e["set_by_flags"] else ""
    return (f"engine                     {e['engine']} {e['version']}: up to {e['max_num_seqs']} "
            f"sequences, {e['max_batched_tokens']}-token budget, "
            f"{'chunked' if e['chunked_prefill'] else 'whole'} prefill, "
            f"{'prefill' if e['prefill_first'] else 'decode'} first, {e['policy']} KV blocks of "
            f"{e['block_size']}, {_graphs(e)}, "
            f"{e['kv_precision']} KV{flags}")  # fmt: skip


def add_parsers(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("predict-serving", help="predict LLM serving: TTFT, TPOT, KV cache")
    add_serving_flags(parser)
    add_from_flag(parser)
    parser.set_defaults(run=predict_serving_command)
