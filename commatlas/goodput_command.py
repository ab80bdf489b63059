"""``commatlas predict-goodput``: checkpoint size, write time, optimal interval, expected goodput.

Takes predict-llm's model and layout flags (``--model`` or the shape flags, ``--tp --pp --dp``,
``--zero``, ``--gpu`` ...; commatlas.llm_args) with ``--global-batch`` optional (given, the step
time is predicted too and the interval is also counted in steps), plus failure and storage flags
whose defaults come from costmodels.goodput.sources (each says its source in ``--help``).
``--json`` prints one object with ``checkpoint_bytes``, ``checkpoint_write_s`` (what training
waits for per checkpoint in ``--mode``), ``optimal_interval_s``, ``expected_goodput`` and more
(commatlas.goodput_report lists them). Bad input exits 2 with one line naming the flag.

Usage::

    commatlas predict-goodput --model llama-3.1-405b --gpu h100 --tp 8 --pp 9 --dp 224 \\
        --zero 1 --mode async --what-if-gpus 1008 4032 16128 --json
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from commatlas.cli_types import bounded_int, nonempty
from commatlas.llm_args import add_predict_flags
from costmodels.limits import MAX_GPUS, MAX_LIST_ITEMS, MAX_UNIT_TEXT, check_items
from costmodels.safe_output import json_text

PROG = "commatlas predict-goodput"
HELP = "expected goodput of a training job under failures and checkpoints"
MODES = ("sync", "async", "in-memory")
RULES = ("daly", "young", "exact")


def add_goodput_flags(parser: argparse.ArgumentParser) -> None:
    """The failure, storage and what-if flags (the model and layout flags are predict-llm's)."""
    text = nonempty(MAX_UNIT_TEXT)
    group = parser.add_argument_group("failures and checkpoints (defaults: costmodels/goodput)")
    group.add_argument("--mode", choices=MODES, default="sync",
                       help="sync: training waits for the write to storage; async: only for "
                       "what of the copy to host memory outlasts the next step's forward and "
                       "backward (CheckFreq; the whole copy without --global-batch); in-memory: "
                       "the copy then goes to a peer's memory (GEMINI)")  # fmt: skip
    group.add_argument("--interval-rule", choices=RULES, default="daly",
                       help="Daly 2006 (default), Young 1974, or the exact optimum")  # fmt: skip
    group.add_argument(
        "--interval",
        type=text,
        metavar="TIME",
        help="checkpoint every TIME of compute instead of the optimum, e.g. 30 min",
    )
    mtbf = group.add_mutually_exclusive_group()
    mtbf.add_argument("--gpu-mtbf", type=text, metavar="TIME",
                      help="mean time between failures of ONE GPU (default: 2,112 days, from "
                      "Llama 3's 419 unexpected interruptions in 54 days on 16,384 H100s, "
                      "arXiv:2407.21783)")  # fmt: skip
    mtbf.add_argument(
        "--job-mtbf",
        type=text,
        metavar="TIME",
        help="a measured mean time between failures of the whole job, e.g. 3 h",
    )
    group.add_argument(
        "--restart",
        type=text,
        default="10 min",
        metavar="TIME",
        help="detect, reschedule and re-initialise after a failure, before the "
        "checkpoint is read (default 10 min: Daly 2006's examples; an estimate)",
    )
    group.add_argument("--storage-bandwidth", type=text, default="2 TB/s", metavar="BW",
                       help="aggregate write bandwidth of the file system (default 2 TB/s: "
                       "Llama 3's Tectonic, sustained)")  # fmt: skip
    group.add_argument("--node-storage-bandwidth", type=text, default="50 GB/s", metavar="BW",
                       help="one node's path to storage (default 50 GB/s: two 200 Gbit/s "
                       "front-end NICs, an estimate)")  # fmt: skip
    group.add_argument(
        "--host-bandwidth",
        type=text,
        metavar="BW",
        help="one GPU's copy to host memory (default: its PCIe link's rate)",
    )
    group.add_argument("--peer-bandwidth", type=text, metavar="BW",
                       help="one node's bandwidth to a peer node, in-memory mode (default: "
                       "--inter x --gpus-per-node)")  # fmt: skip
    group.add_argument(
        "--storage-latency",
        type=text,
        default="0 s",
        metavar="TIME",
        help="fixed cost per checkpoint write (open, metadata, barrier)",
    )
    group.add_argument("--state-precision", choices=("mixed", "fp32"), default="mixed",
                       help="what is saved per parameter: mixed (16-bit weights + fp32 Adam: "
                       "14 bytes) or fp32 (12 bytes)")  # fmt: skip
    group.add_argument("--balanced-save", action="store_true",
                       help="split replicated tensors over their data-parallel replicas "
                       "(default: the first replica writes them)")  # fmt: skip
    what_if = parser.add_argument_group("what-if table (any of these prints it)")
    what_if.add_argument("--what-if-gpus", nargs="+", type=bounded_int(1, MAX_GPUS), metavar="N",
                         help="GPU counts (the data-parallel degree scales)")  # fmt: skip
    what_if.add_argument(
        "--what-if-storage",
        nargs="+",
        type=text,
        metavar="BW",
        help="aggregate storage bandwidths, e.g. '200 GB/s' '2 TB/s'",
    )
    what_if.add_argument("--what-if-interval", nargs="+", type=text, metavar="TIME",
                         help="intervals, e.g. optimal '30 min' '2 h'")  # fmt: skip


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Register ``predict-goodput`` on the ``commatlas`` subparsers."""
    cmd = sub.add_parser("predict-goodput", help=HELP, description=HELP)
    add_predict_flags(cmd, batch_required=False)  # the batch only adds the step time
    add_goodput_flags(cmd)
    cmd.set_defaults(run=run_goodput)


def _what_if_lists(args: argparse.Namespace, inputs: Any) -> dict[str, list[Any]] | None:
    from costmodels.units import parse_bandwidth, parse_time

    if not (args.what_if_gpus or args.what_if_storage or args.what_if_interval):
        return None
    for values, flag in ((args.what_if_gpus, "--what-if-gpus"),
                         (args.what_if_storage, "--what-if-storage"),
                         (args.what_if_interval, "--what-if-interval")):  # fmt: skip
        if values:
            check_items(list(values), flag, MAX_LIST_ITEMS)
    gpus = list(args.what_if_gpus or [])
    storage = [parse_bandwidth(b, "--what-if-storage") for b in args.what_if_storage or []]
    intervals = [None if t.strip() == "optimal" else parse_time(t, "--what-if-interval")
                 for t in args.what_if_interval or []]  # fmt: skip
    if any(t == 0 for t in intervals):
        raise ValueError("--what-if-interval: an interval must be more than 0 s")
    return {
        "gpu_counts": gpus or [inputs.layout.gpus],
        "storage_Bps": storage or [inputs.bandwidths.storage_Bps],
        "intervals_s": intervals or [inputs.interval_s],
    }


def run_goodput(args: argparse.Namespace) -> int:
    from commatlas.goodput_report import goodput_json, print_text, resolve_inputs
    from costmodels.goodput import what_if

    try:
        inputs = resolve_inputs(args)
        results = _predictions(args, inputs)
        lists = _what_if_lists(args, inputs)
        table = None
        if lists is not None:
            table = what_if(inputs.shape, inputs.layout, gpus_per_node=args.gpus_per_node,
                            bandwidths=inputs.bandwidths, gpu_mtbf_s=_per_gpu_mtbf(inputs),
                            restart_s=inputs.restart_s, rule=args.interval_rule,
                            precision=args.state_precision, balanced=args.balanced_save,
                            snapshot_overlap_s=inputs.snapshot_overlap_s, **lists)  # fmt: skip
    except ValueError as exc:  # UnitParseError, LayoutError, ShapeError ...
        print(f"{PROG}: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    out = goodput_json(args, inputs, results, table)
    if args.json:
        print(json_text(out))
    else:
        print_text(out)
    return 0


def _persist(inputs: Any, mode: str) -> float:
    from costmodels.goodput import checkpoint_cost

    return checkpoint_cost(inputs.size, mode, inputs.bandwidths).persist_s  # overlap: no effect


def _per_gpu_mtbf(inputs: Any) -> float:
    """The per-GPU MTBF the what-if table scales: a measured job MTBF x the job's GPUs."""
    if inputs.job_mtbf_s is not None:
        return inputs.job_mtbf_s * inputs.layout.gpus
    return inputs.gpu_mtbf_s


def _predictions(args: argparse.Namespace, inputs: Any) -> dict[str, Any]:
    """One prediction per mode; with a fixed --interval, the modes whose background write
    outlasts it are left out (the chosen --mode is kept, to fail with its own message)."""
    from costmodels.goodput import predict_goodput

    out = {}
    for mode in MODES:
        if mode != args.mode and inputs.interval_s is not None:
            if inputs.interval_s < _persist(inputs, mode):
                continue
        out[mode] = predict_goodput(inputs.size, mode, inputs.bandwidths,
                                    gpu_mtbf_s=inputs.gpu_mtbf_s, restart_s=inputs.restart_s,
                                    rule=args.interval_rule, interval_s=inputs.interval_s,
                                    job_mtbf_override_s=inputs.job_mtbf_s,
                                    snapshot_overlap_s=inputs.snapshot_overlap_s)  # fmt: skip
    return out
