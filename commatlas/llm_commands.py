"""``commatlas predict-llm | plan-llm``: large-model training cost models from the command line.

The flags and JSON keys are a contract (issue 5). ``predict-llm --json`` prints one object with
at least iteration_time_s, memory_per_gpu_bytes, bubble_fraction and model_flops_utilization;
``plan-llm --json`` prints a list of such objects, fastest first, each with its layout.
Bad input exits 2 with one line naming the flag; the work lives in costmodels.llm.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any

from costmodels.units import UnitParseError, parse_bandwidth


class FlagError(ValueError):
    """Bad command-line input; the message names the flag."""


def _positive_int(text: str) -> int:
    # argparse prefixes the message with the flag ("argument --layers: ...") and exits 2.
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _shape(args: argparse.Namespace):
    from costmodels.llm.shapes import TransformerShape

    if args.hidden % args.heads:
        raise FlagError(f"--hidden {args.hidden} is not divisible by --heads {args.heads}")
    return TransformerShape(
        layers=args.layers, hidden=args.hidden, heads=args.heads, seq_len=args.seq_len,
        ffn=args.ffn, vocab=args.vocab,
    )  # fmt: skip


def _cluster(args: argparse.Namespace):
    from costmodels.hardware import get_gpu
    from costmodels.llm.shapes import LLMCluster

    try:
        gpu = get_gpu(args.gpu)
    except ValueError as exc:
        raise FlagError(f"--gpu: {exc}") from None
    return LLMCluster(
        gpu=gpu,
        gpus_per_node=args.gpus_per_node,
        intra_bandwidth_Bps=parse_bandwidth(args.intra, "--intra"),
        inter_bandwidth_Bps=parse_bandwidth(args.inter, "--inter"),
    )


def _layout(args: argparse.Namespace):
    from costmodels.llm.shapes import Layout

    per_step = args.dp * args.micro_batch
    if args.global_batch % per_step:
        raise FlagError(
            f"--global-batch {args.global_batch} is not a multiple of --dp x --micro-batch "
            f"({args.dp} x {args.micro_batch})"
        )
    if args.layers % args.pp:
        raise FlagError(f"--pp {args.pp} does not divide --layers {args.layers}")
    if args.interleave > 1 and (args.layers // args.pp) % args.interleave:
        raise FlagError(
            f"--interleave {args.interleave} does not divide the {args.layers // args.pp} "
            "layers per pipeline stage"
        )
    return Layout(
        tp=args.tp, pp=args.pp, dp=args.dp, global_batch=args.global_batch,
        micro_batch=args.micro_batch, interleave=args.interleave, zero=args.zero,
        sequence_parallel=args.sequence_parallel, recompute=args.recompute,
        schedule="interleaved" if args.interleave > 1 else "1f1b",
    )  # fmt: skip


def _layout_json(layout: Any) -> dict[str, Any]:
    keys = ("tp", "pp", "dp", "micro_batch", "interleave", "zero", "sequence_parallel",
            "recompute", "global_batch")  # fmt: skip
    return {key: getattr(layout, key) for key in keys}


def _fail(command: str, exc: Exception) -> int:
    print(f"commatlas {command}: {exc}", file=sys.stderr)
    return 2


def predict_llm_command(args: argparse.Namespace) -> int:
    from costmodels.llm.step import predict_step

    try:
        shape, layout, cluster = _shape(args), _layout(args), _cluster(args)
    except (FlagError, UnitParseError) as exc:
        return _fail("predict-llm", exc)
    out = {**asdict(predict_step(shape, layout, cluster)), "layout": _layout_json(layout)}
    if args.json:
        print(json.dumps(out))
        return 0
    for key, value in out.items():
        print(f"{key:30s} {value:.6g}" if isinstance(value, float) else f"{key:30s} {value}")
    return 0


def plan_llm_command(args: argparse.Namespace) -> int:
    from costmodels.llm.planner import plan

    try:
        shape, cluster = _shape(args), _cluster(args)
    except (FlagError, UnitParseError) as exc:
        return _fail("plan-llm", exc)
    ranked = plan(shape, args.gpus, cluster, args.global_batch)[: args.top]
    if not ranked:
        print(
            f"commatlas plan-llm: no layout of {args.gpus} GPUs fits this model and batch",
            file=sys.stderr,
        )
        return 1
    rows = [{**asdict(c.prediction), "layout": _layout_json(c.layout)} for c in ranked]
    if args.json:
        print(json.dumps(rows))
        return 0
    print(f"{'rank':>4s} {'tp':>3s} {'pp':>3s} {'dp':>5s} {'mb':>3s} {'v':>2s} {'zero':>4s} "
          f"{'sp':>3s} {'recompute':>9s} {'iter s':>9s} {'mem GiB':>8s} {'MFU':>5s}")  # fmt: skip
    for i, row in enumerate(rows, 1):
        lay = row["layout"]
        print(
            f"{i:4d} {lay['tp']:3d} {lay['pp']:3d} {lay['dp']:5d} {lay['micro_batch']:3d} "
            f"{lay['interleave']:2d} {lay['zero']:4d} "
            f"{'yes' if lay['sequence_parallel'] else 'no':>3s} {lay['recompute']:>9s} "
            f"{row['iteration_time_s']:9.4g} {row['memory_per_gpu_bytes'] / 2**30:8.2f} "
            f"{row['model_flops_utilization']:5.3f}"
        )
    return 0


def _model_and_cluster_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--layers", type=_positive_int, required=True)
    parser.add_argument("--hidden", type=_positive_int, required=True)
    parser.add_argument("--heads", type=_positive_int, required=True)
    parser.add_argument("--seq-len", type=_positive_int, required=True)
    parser.add_argument("--ffn", type=_positive_int, help="FFN size (default 4 x hidden)")
    parser.add_argument("--vocab", type=_positive_int, default=51200)
    parser.add_argument("--global-batch", type=_positive_int, required=True, help="sequences")
    parser.add_argument("--gpu", default="a100-80gb", help="GPU preset, e.g. a100-80gb, h100")
    parser.add_argument("--gpus-per-node", type=_positive_int, default=8)
    parser.add_argument("--intra", default="300 GB/s", help="intra-node bandwidth per GPU")
    parser.add_argument("--inter", default="25 GB/s", help="inter-node bandwidth per GPU")
    parser.add_argument("--json", action="store_true")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    pred = sub.add_parser("predict-llm", help="predict one training step of a large transformer")
    _model_and_cluster_flags(pred)
    pred.add_argument("--micro-batch", type=_positive_int, default=1)
    pred.add_argument("--tp", type=_positive_int, required=True)
    pred.add_argument("--pp", type=_positive_int, required=True)
    pred.add_argument("--dp", type=_positive_int, required=True)
    pred.add_argument("--interleave", type=_positive_int, default=1, help="virtual stages/GPU")
    pred.add_argument("--zero", type=int, choices=[0, 1, 2, 3], default=0)
    pred.add_argument("--sequence-parallel", action="store_true")
    pred.add_argument("--recompute", choices=["none", "selective", "full"], default="none")
    pred.set_defaults(run=predict_llm_command)

    plan = sub.add_parser("plan-llm", help="rank every valid parallel layout by step time")
    _model_and_cluster_flags(plan)
    plan.add_argument("--gpus", type=_positive_int, required=True, help="total GPUs")
    plan.add_argument("--top", type=_positive_int, default=10, help="layouts to print")
    plan.set_defaults(run=plan_llm_command)
