"""``commatlas predict-serving``: prefill and decode of one model on a TP x PP (x EP) instance.

Flags (issue 19): predict-llm's model flags (``--model``, ``--hf-config`` or the shape flags; the
sequence is the prompt plus the output, so there is no ``--seq-len``), ``--gpu``, ``--tp [--pp]
[--ep] --batch B --prompt-len P --output-len O [--disaggregated --prefill-gpus N --decode-gpus M
--transfer-link ...] --json``. ``--json`` prints one object with ``ttft_s``, ``tpot_s``,
``tokens_per_s_per_gpu``, ``kv_cache_bytes_per_token``, ``kv_transfer_s``,
``memory_per_gpu_bytes`` and the rest of costmodels.serving.ServingPrediction, plus what was
assumed (model, shape, gpu, layout, request, cluster). Bad input exits 2 with one line naming
the flag; the work lives in costmodels.serving.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from typing import Any

from commatlas.cli_types import bounded_int, nonempty
from commatlas.llm_args import add_cluster_flags, add_model_flags
from commatlas.llm_commands import cluster_and_source
from costmodels.limits import MAX_BATCH, MAX_GPUS, MAX_SEQUENCE
from costmodels.llm.precision import PRECISIONS
from costmodels.safe_output import json_text

SHAPE_KEYS = ("layers", "hidden", "heads", "ffn", "vocab", "kv_heads", "gated_mlp",
              "tied_embeddings", "experts", "top_k")  # fmt: skip
KV_PRECISIONS = ("bf16", "fp16", "fp8")
DEFAULT_TRANSFER = "InfiniBand NDR"


def add_serving_flags(parser: argparse.ArgumentParser) -> None:
    add_model_flags(parser)
    count = bounded_int(1, MAX_GPUS)
    cluster = parser.add_argument_group("cluster")
    add_cluster_flags(cluster, gpu_default="h100")
    cluster.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="bf16",
        help="weights and GEMMs (fp8: 1-byte weights at the fp8 peak)",
    )
    cluster.add_argument(
        "--kv-precision",
        choices=KV_PRECISIONS,
        default="bf16",
        help="bytes per cached key/value element (fp8 halves the cache)",
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
    layout.add_argument(
        "--batch", type=bounded_int(1, MAX_BATCH), required=True, help="sequences decoded together"
    )
    length = bounded_int(1, MAX_SEQUENCE)
    layout.add_argument("--prompt-len", type=length, required=True, help="prompt tokens")
    layout.add_argument("--output-len", type=length, required=True, help="generated tokens")
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


def predict_serving_command(args: argparse.Namespace) -> int:
    from costmodels.llm.shape_inputs import SHAPE_FLAGS, resolve_shape
    from costmodels.serving import ServingLayout, predict_serving

    try:
        overrides = {key: getattr(args, key) for key in SHAPE_KEYS}
        overrides["seq_len"] = args.prompt_len + args.output_len
        names = {**SHAPE_FLAGS, "seq_len": "--prompt-len + --output-len"}
        resolved = resolve_shape(model=args.model, hf_config=args.hf_config, overrides=overrides,
                                 names=names)  # fmt: skip
        cluster, intra_source = cluster_and_source(args)
        if args.precision == "fp8" and cluster.gpu.fp8_tflops is None:
            raise ValueError(f"--precision fp8: the {cluster.gpu.name} has no fp8 tensor cores")
        layout = ServingLayout(args.tp, args.pp, args.ep, args.precision, args.kv_precision,
                               not args.eager)  # fmt: skip
        prediction = predict_serving(
            resolved.shape, layout, cluster, batch=args.batch, prompt_len=args.prompt_len,
            output_len=args.output_len, pools=_pools(args, layout.gpus, cluster.gpu),
        )  # fmt: skip
    except ValueError as exc:  # ShapeError, ServingLayoutError, UnitParseError, ConfigError ...
        print(f"commatlas predict-serving: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    out = {**asdict(prediction), "model": resolved.source, "shape": asdict(resolved.shape),
           "gpu": {"name": cluster.gpu.name, "memory_bandwidth_Bps":
                   cluster.gpu.memory_bandwidth_Bps, "memory_bytes": cluster.gpu.memory_bytes},
           "layout": asdict(layout) | {"gpus": layout.gpus},
           "request": {"batch": args.batch, "prompt_len": args.prompt_len,
                       "output_len": args.output_len},
           "cluster": {"gpus_per_node": cluster.gpus_per_node,
                       "intra_bandwidth_Bps": cluster.intra_bandwidth_Bps,
                       "intra_source": intra_source,
                       "inter_bandwidth_Bps": cluster.inter_bandwidth_Bps}}  # fmt: skip
    print(json_text(out) if args.json else _text(out))
    return 0


def _text(out: dict[str, Any]) -> str:
    ms = 1e3
    lines = [
        f"{out['model']}: {out['layout']['gpus']} x {out['gpu']['name']} per instance "
        f"(TP {out['layout']['tp']}, PP {out['layout']['pp']}, EP {out['layout']['ep']}), "
        f"{out['layout']['precision']} weights, {out['layout']['kv_precision']} KV cache",
        f"time to first token        {out['ttft_s'] * ms:.4g} ms",
        f"time per output token      {out['tpot_s'] * ms:.4g} ms (batch {out['request']['batch']})",
        f"tokens/s per GPU           {out['tokens_per_s_per_gpu']:.4g}",
        f"KV cache per token         {out['kv_cache_bytes_per_token'] / 2**10:.4g} KiB",
        f"memory per GPU             {out['memory_per_gpu_bytes'] / 2**30:.4g} GiB"
        + ("" if out["fits"] else " (does NOT fit)"),
        f"prefill:decode GPU ratio   {out['prefill_decode_gpu_ratio']:.3g}",
    ]
    regime = out["decode_tp_allreduce"]
    if regime["algorithm"] != "none":
        lines.append(f"decode TP all-reduce       {regime['bytes'] / 1e3:.3g} kB, NCCL "
                     f"{regime['algorithm']}/{regime['protocol']}, "
                     f"{regime['seconds'] * 1e6:.3g} us ({regime['latency_s'] * 1e6:.3g} us "
                     "latency)")  # fmt: skip
    if out["pools"]:
        lines.append(f"KV transfer                {out['kv_transfer_s'] * ms:.4g} ms "
                     f"({out['kv_transfer_exposed_s'] * ms:.4g} ms exposed); pools sustain "
                     f"{out['pools']['requests_per_s']:.4g} requests/s, "
                     f"{out['pools']['bottleneck']} bound")  # fmt: skip
    return "\n".join(lines)


def add_parsers(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("predict-serving", help="predict LLM serving: TTFT, TPOT, KV cache")
    add_serving_flags(parser)
    parser.set_defaults(run=predict_serving_command)
