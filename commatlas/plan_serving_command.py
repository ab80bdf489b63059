"""``commatlas plan-serving``: the deployment that serves a workload at the highest request rate
per GPU within latency targets (costmodels.serving.plan).

    commatlas plan-serving --model llama-3.1-70b --gpus h100,h200,b200 --tp 1,2,4,8 \\
        --precision bf16,fp8,fp4 --prompt-len 1024 --output-len 256 \\
        --slo-ttft-p90 "2 s" --slo-tpot-p99 "50 ms" [--pp 1,2] [--ep 1] [--price h100=2.5 ...]
        [--rank gpu|dollar] [--target-rate R] [--top K] [--json]

Searches every GPU x TP x PP x EP x precision (plus the engine flags of commatlas.serving_args),
ranks them by output tokens/s per GPU (or per dollar with ``--rank dollar``; ``--price`` takes
``GPU=$/GPU-hour`` pairs), and prints the table (``--json``: the rows as objects). With
``--target-rate`` (requests/s in all) every row says how many replicas it needs. Bad input is
one line naming the flag, exit 2.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from typing import Any

from commatlas.cli_types import choice_list, int_list, nonempty, positive_float
from commatlas.job_files.emit import emit_target
from commatlas.job_files.emit_serving import add_serving_emit_flags, emit_deployment
from commatlas.llm_args import add_model_flags
from commatlas.serving_args import add_engine_flags, add_request_flags
from commatlas.serving_command import DEFAULT_REQUESTS
from costmodels.limits import MAX_GPUS
from costmodels.safe_output import json_text

PRECISIONS = ("bf16", "fp16", "fp8", "fp4")
MAX_TOP = 50  # deployments simulated at least (each ~10 simulations)
MAX_PLAN_REQUESTS = 5000  # requests per simulation of a plan
MAX_DEPLOYMENTS = 2000
INTER_Bps = 25e9  # per GPU between nodes: predict-serving's --inter default (one 200G NIC)
SHAPE_KEYS = (
    "layers",
    "hidden",
    "heads",
    "ffn",
    "vocab",
    "kv_heads",
    "gated_mlp",
    "tied_embeddings",
    "experts",
    "top_k",
    "head_dim",
    "mlp",
    "position",
)


def add_parsers(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "plan-serving", help="deployments ranked by request rate per GPU under TTFT/TPOT targets"
    )
    add_model_flags(parser)
    search = parser.add_argument_group("search")
    search.add_argument(
        "--gpus",
        type=nonempty(400),
        default="h100,h200,b200",
        help="GPU presets to try, comma-separated (default h100,h200,b200)",
    )
    search.add_argument(
        "--tp",
        type=int_list(1, MAX_GPUS),
        default=(1, 2, 4, 8),
        help="tensor-parallel degrees (default 1,2,4,8)",
    )
    search.add_argument("--pp", type=int_list(1, MAX_GPUS), default=(1,), help="pipeline stages")
    search.add_argument(
        "--ep",
        type=int_list(1, MAX_GPUS),
        default=(1,),
        help="expert-parallel degrees (MoE; multiples of --tp)",
    )
    search.add_argument(
        "--precision",
        type=choice_list(PRECISIONS),
        default=("bf16", "fp8"),
        help="weights/GEMMs to try (default bf16,fp8; fp4 on Blackwell); the KV cache "
        "follows the engine's rule (fp8 for fp8/fp4 checkpoints on trtllm, else 16-bit; "
        "costmodels.serving.engine_presets.kv_precision_for)",
    )
    search.add_argument(
        "--gpus-per-node", type=int_list(1, 1024), default=(8,), help="GPUs per node (one value)"
    )
    slo = parser.add_argument_group("targets and cost")
    slo.add_argument(
        "--slo-ttft-p90",
        type=nonempty(64),
        required=True,
        help="time to first token at the 90th percentile, e.g. '2 s'",
    )
    slo.add_argument(
        "--slo-tpot-p99",
        type=nonempty(64),
        required=True,
        help="time per output token at the 99th percentile, e.g. '50 ms'",
    )
    slo.add_argument(
        "--price",
        nargs="+",
        type=nonempty(80),
        metavar="GPU=USD",
        help="$ per GPU-hour, e.g. h100=2.5 b200=5",
    )
    slo.add_argument(
        "--rank",
        choices=("gpu", "dollar"),
        default="gpu",
        help="rank by output tokens/s per GPU or per dollar (needs --price)",
    )
    slo.add_argument(
        "--target-rate",
        type=positive_float,
        help="requests/s to serve in all: replicas each deployment needs",
    )
    slo.add_argument(
        "--top",
        type=int_list(1, MAX_TOP, 1),
        default=(10,),
        help="deployments simulated and shown (default 10)",
    )
    add_request_flags(parser, default_requests=DEFAULT_REQUESTS, max_requests=MAX_PLAN_REQUESTS)
    add_engine_flags(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    add_serving_emit_flags(parser)
    parser.set_defaults(run=plan_serving_command)


def _prices(items: list[str] | None) -> dict[str, float]:
    from costmodels.hardware import get_gpu

    out: dict[str, float] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        try:
            price = float(value)
        except ValueError:
            price = float("nan")
        if not sep or not 0 < price < float("inf"):
            raise ValueError(f"--price {item!r}: write GPU=dollars-per-GPU-hour, e.g. h100=2.5")
        try:
            gpu = get_gpu(name).name
        except ValueError as exc:
            raise ValueError(f"--price: {exc}") from None
        if gpu in out:  # two prices for one GPU (h100= twice, or h100= and 'H100 SXM'=)
            raise ValueError(f"--price: the {gpu} is priced twice ({out[gpu]:g} and {price:g}); "
                             "give one price per GPU")  # fmt: skip
        out[gpu] = price
    return out


def _deployments(args: argparse.Namespace) -> list[Any]:
    from costmodels.hardware import get_gpu
    from costmodels.serving.engine_presets import custom_allreduce_for, kv_precision_for
    from costmodels.serving.layout import ServingLayout
    from costmodels.serving.plan import Deployment

    names = [part.strip() for part in args.gpus.split(",") if part.strip()]
    if not names or len(names) > 16:
        raise ValueError("--gpus: give 1 to 16 GPU presets, comma-separated")
    out = []
    for name in names:
        try:
            gpu = get_gpu(name).name
        except ValueError as exc:
            raise ValueError(f"--gpus: {exc}") from None
        for tp in args.tp:
            for pp in args.pp:
                for ep in args.ep:
                    if ep > 1 and ep % tp:
                        continue
                    for precision in args.precision:
                        if len(out) >= MAX_DEPLOYMENTS:
                            raise ValueError(
                                f"more than {MAX_DEPLOYMENTS:,} deployments to "
                                "try: narrow --gpus, --tp, --pp, --ep or "
                                "--precision"
                            )
                        kv = kv_precision_for(args.engine, precision)
                        custom = custom_allreduce_for(args.engine, args.disable_custom_all_reduce)
                        layout = ServingLayout(tp, pp, ep, precision, kv, True, custom,
                                               args.moe_a2a_backend)
                        out.append(Deployment(gpu, layout))
    return out


def plan_serving_command(args: argparse.Namespace) -> int:
    from commatlas.serving_args import engine_settings_for, request_set
    from costmodels.llm.intra_link import gpu_intra_link
    from costmodels.llm.shape_inputs import SHAPE_FLAGS
    from costmodels.llm.shapes import LLMCluster
    from costmodels.serving.engine_presets import check_engine as engine_default_version
    from costmodels.serving.plan import SLO, plan_serving
    from costmodels.serving.shape_inputs import resolve_serving_shape
    from costmodels.units import parse_time

    try:
        emit_to = emit_target(args)  # --emit vllm|sglang (issue 41), checked before the search
        if len(args.gpus_per_node) != 1:
            raise ValueError("--gpus-per-node takes one value here")
        slo = SLO(
            parse_time(args.slo_ttft_p90, "--slo-ttft-p90"),
            parse_time(args.slo_tpot_p99, "--slo-tpot-p99"),
        )
        prices = _prices(args.price)
        if args.rank == "dollar" and not prices:
            raise ValueError("--rank dollar needs --price")
        closed = args.concurrency is not None  # else unit rate: scaled to each candidate
        requests = request_set(args, "server", None if closed else 1.0)
        overrides = {key: getattr(args, key) for key in SHAPE_KEYS}
        overrides["seq_len"] = int((requests.prompt + requests.output).max())
        names = {**SHAPE_FLAGS, "seq_len": "--prompt-len + --output-len"}
        shape = resolve_serving_shape(
            model=args.model, hf_config=args.hf_config, overrides=overrides, names=names
        )
        gpn = args.gpus_per_node[0]
        inter = INTER_Bps

        def cluster_of(name: str) -> LLMCluster:
            from costmodels.hardware import get_gpu

            gpu = get_gpu(name)
            link = gpu_intra_link(gpu)
            return LLMCluster(gpu, gpn, link.bandwidth_Bps, inter, intra_latency_s=link.latency_s)

        deployments = _deployments(args)
        if not deployments:
            raise ValueError("no deployment to try (--ep values must be multiples of --tp)")
        def engine_of(d: Any, cluster: LLMCluster) -> Any:
            return engine_settings_for(args, shape.shape, d.layout, cluster, requests,
                                       "server").config  # fmt: skip

        rows = plan_serving(
            shape.shape,
            deployments,
            cluster_of,
            engine_of,
            requests,
            slo,
            prices,
            top=args.top[0],
            target_rate=args.target_rate,
            rank_by=args.rank,
        )
        if emit_to is not None and emit_deployment(args, emit_to, rows):
            return 0
    except ValueError as exc:
        print(f"commatlas plan-serving: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    out = {
        "model": shape.source,
        "slo": asdict(slo),
        "deployments": len(deployments),
        "requests": len(requests),
        "concurrency": args.concurrency,
        "engine": {"engine": args.engine,
                   "version": engine_default_version(args.engine, args.engine_version)},
        "rows": [asdict(r) for r in rows],
    }
    print(json_text(out) if args.json else _text(out, rows, args.top[0]))
    return 0


def _text(out: dict[str, Any], rows: list[Any], top: int) -> str:
    slo = out["slo"]
    lines = [
        f"{out['model']}: {out['deployments']} deployments, targets TTFT p90 <= "
        f"{slo['ttft_p90_s'] * 1e3:.4g} ms, TPOT p99 <= {slo['tpot_p99_s'] * 1e3:.4g} ms "
        f"({out['requests']} requests per simulation"
        + (f", closed loop of {out['concurrency']} users" if out["concurrency"] else "")
        + f"; {out['engine']['engine']} {out['engine']['version']} defaults)",
        f"{'gpu':13} {'tp':>3} {'pp':>3} {'ep':>3} {'prec':5} {'req/s/GPU':>10} "
        f"{'tok/s/GPU':>10} {'tok/$':>9} {'TTFT p90':>9} {'TPOT p99':>9}  note",
    ]
    for r in rows[:top]:
        dollar = f"{r.output_tokens_per_dollar:9.4g}" if r.output_tokens_per_dollar else f"{'-':>9}"
        ttft = f"{r.ttft_p90_s * 1e3:7.4g}ms" if r.ttft_p90_s is not None else f"{'-':>9}"
        tpot = f"{r.tpot_p99_s * 1e3:7.4g}ms" if r.tpot_p99_s is not None else f"{'-':>9}"
        replicas = f", {r.replicas} replicas" if r.replicas else ""
        lines.append(
            f"{r.gpu:13} {r.tp:3} {r.pp:3} {r.ep:3} {r.precision:5} "
            f"{r.requests_per_s_per_gpu:10.4g} {r.output_tokens_per_s_per_gpu:10.4g} "
            f"{dollar} {ttft} {tpot}  {r.reason}{replicas}"
        )
    return "\n".join(lines)
