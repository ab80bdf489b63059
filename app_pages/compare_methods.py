"""Methods of the Compare page as short labels, and a fast path to ``costmodels.dp.predict``.

A method is ``costmodels.dp.predict.Method`` (architecture x collective x schedule x compression);
its label ``Method.label`` (``schedule/where+compression``, e.g. ``wfbp/ring+topk:0.01``,
``bsp/ps-separatex2``) is what the page stores in the URL, and :func:`parse_method` reads it
back, rejecting anything else with a message.

Why a fast path: ``costmodels.dp.predict.predict`` hands the schedule a closure that evaluates the
sympy-lambdified cost model for every message size it asks about, about 15-40 us a call. MG-WFBP
asks O(L^2) sizes (80,000 for BERT-Large's 398 tensors), so one prediction takes seconds.
:func:`predict_fast` runs the same pieces (``split_step``, ``Workload.gradients``,
``simulate``, ``message_seconds``) but, for uncompressed all-reduce whose formula is affine in
the message size n (checked symbolically: d^2T/dn^2 = 0), evaluates intercept + slope * n with
both coefficients computed once; every other method (NCCL's all-reduce included, a few us a
call) memoises ``message_seconds`` by size. Tests
hold the results equal to ``predict`` within 1e-12 relative (float rounding of a different
evaluation order).

>>> from costmodels.dp.predict import Cluster, predict
>>> from costmodels.workloads import get_workload
>>> args = get_workload("resnet50"), 32, 0.3, Cluster(2, 8, 100e9, 2e-6, 12.5e9, 5e-6)
>>> fast = predict_fast(*args, parse_method("mg-wfbp/ring")).iteration_time_s
>>> abs(fast - predict(*args, parse_method("mg-wfbp/ring")).iteration_time_s) <= 1e-12 * fast
True
>>> fast = predict_fast(*args, parse_method("wfbp/nccl")).iteration_time_s
>>> abs(fast - predict(*args, parse_method("wfbp/nccl")).iteration_time_s) <= 1e-12 * fast
True
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache, lru_cache

import costmodels
from costmodels.dp.cluster import ALLREDUCE_CHOICES
from costmodels.dp.collective_time import ALLREDUCE_ALGORITHMS
from costmodels.dp.compression_cost import kernel_memory_bandwidth
from costmodels.dp.compression_exchange import exchange_time, spec_record
from costmodels.dp.predict import (
    SCHEDULE_NAMES,
    Cluster,
    Method,
    Prediction,
    exchange_link,
    predict,
)
from costmodels.dp.predict import message_seconds as exact_message_seconds
from costmodels.workloads import Workload

ARCHITECTURES = {"allreduce": "all-reduce", "ps": "parameter server"}
COMPRESSIONS = ("none", "fp16", "topk:0.01", "topk:0.001", "powersgd:4", "qsgd:8", "signsgd")

#: preset methods offered in the menu (labels of costmodels.dp.predict.Method)
PRESET_METHODS: tuple[str, ...] = tuple(
    Method(architecture=arch, schedule=schedule, collective=collective, compression=squeeze).label
    for arch, schedule, collective, squeeze in (
        ("allreduce", "bsp", "nccl", "none"),
        ("allreduce", "wfbp", "nccl", "none"),
        ("allreduce", "fusion", "nccl", "none"),
        ("allreduce", "mg-wfbp", "nccl", "none"),
        ("allreduce", "bytescheduler", "nccl", "none"),
        ("allreduce", "wfbp", "nccl-ring", "none"),
        ("allreduce", "wfbp", "nccl-tree", "none"),
        ("allreduce", "wfbp", "ring", "none"),
        ("allreduce", "wfbp", "hierarchical", "none"),
        ("allreduce", "wfbp", "double-binary-tree", "none"),
        ("allreduce", "wfbp", "halving-doubling", "none"),
        ("allreduce", "wfbp", "torus2d", "none"),
        ("allreduce", "wfbp", "in-network", "none"),
        ("ps", "bsp", "nccl", "none"),
        ("ps", "wfbp", "nccl", "none"),
        ("ps", "bytescheduler", "nccl", "none"),
        ("allreduce", "fusion", "nccl", "fp16"),
        ("allreduce", "wfbp", "nccl", "topk:0.01"),
        ("allreduce", "wfbp", "nccl", "powersgd:4"),
        ("allreduce", "wfbp", "nccl", "qsgd:8"),
        ("allreduce", "local-sgd", "nccl", "none"),
    )
)
# Seven of the eight slots: "Add a custom method" works from the start (issue 17).
DEFAULT_METHODS: tuple[str, ...] = (
    "bsp/nccl",
    "wfbp/nccl",
    "mg-wfbp/nccl",
    "bytescheduler/nccl",
    "wfbp/ring",
    "bsp/ps-separate",
    "wfbp/nccl+topk:0.01",
)
MAX_METHODS = 8

_LABEL = re.compile(
    r"^(?P<schedule>[a-z-]+)/(?:ps-(?P<placement>separate|colocated)(?:x(?P<servers>[0-9]{1,4}))?"
    r"|(?P<collective>[a-z0-9-]+))(?:\+(?P<compression>[a-z0-9:.]+))?$"
)


@lru_cache(maxsize=4096)
def parse_method(label: str) -> Method:
    """The Method whose ``.label`` is ``label``; ValueError with the reason otherwise."""
    text = str(label).strip()
    match = _LABEL.match(text)
    if match is None:
        raise ValueError(
            f"{text[:40]!r} is not a method label like 'wfbp/ring', 'bsp/ps-separatex2' or "
            "'wfbp/ring+topk:0.01'"
        )
    parts = match.groupdict()
    if parts["schedule"] not in SCHEDULE_NAMES:
        raise ValueError(f"{text!r}: schedule must be one of {', '.join(SCHEDULE_NAMES)}")
    compression = parts["compression"] or "none"
    if compression != "none":
        spec_record(compression)  # raises for a bad spec, without building a cost model
    if parts["placement"]:
        servers = int(parts["servers"]) if parts["servers"] else None
        if servers is not None and servers < 1:
            raise ValueError(f"{text!r}: the number of servers must be at least 1")
        method = Method(
            architecture="ps",
            schedule=parts["schedule"],
            ps_placement=parts["placement"],
            ps_servers=servers,
            compression=compression,
        )
    else:
        if parts["collective"] not in ALLREDUCE_CHOICES:
            raise ValueError(f"{text!r}: collective must be one of {', '.join(ALLREDUCE_CHOICES)}")
        method = Method(
            schedule=parts["schedule"], collective=parts["collective"], compression=compression
        )
    if method.label != text:  # e.g. a spelling the label never produces ("+none")
        raise ValueError(f"{text!r}: write it as {method.label!r}")
    return method


def valid_label(label: str) -> str:
    """Parser for the URL: returns the label if it names a method."""
    parse_method(label)
    return label


@cache
def _affine_parts(model_id: str, variant: str) -> tuple[list[str], Callable, Callable] | None:
    """(argument names, intercept(...), slope(...)) when T(n) is affine in n, else None."""
    import sympy as sp  # here, not at import: the page's sidebar draws before sympy loads

    from costmodels.symbols import key_of, n

    expr = costmodels.get(model_id).variant(variant).time
    # No sp.simplify: it costs ~1 s on first use (it imports sympy.physics) and the formulas'
    # derivatives are already free of n when they are affine; a slope that only simplifies to
    # a constant takes the exact (memoised) path, which is equal, only slower.
    slope = sp.diff(expr, n)
    if slope.has(n):  # not affine in n (e.g. Max(n, ...)): memoise the exact function instead
        return None
    intercept = expr.subs(n, 0)
    args = sorted(intercept.free_symbols | slope.free_symbols, key=lambda s: s.name)
    names = [key_of(s) for s in args]
    return names, sp.lambdify(args, intercept, "numpy"), sp.lambdify(args, slope, "numpy")


def fast_comm(method: Method, cluster: Cluster) -> Callable[[float], float]:
    """bytes -> seconds for one message, equal to ``costmodels.dp.predict.message_seconds``."""
    affine = None
    textbook = method.collective in ALLREDUCE_ALGORITHMS  # NCCL's fast path is exact already
    if method.compression == "none" and method.architecture == "allreduce" and textbook:
        affine = _affine_parts(*ALLREDUCE_ALGORITHMS[method.collective])
    if affine is None or cluster.p == 1:

        @lru_cache(maxsize=65536)
        def memo(nbytes: float) -> float:
            return exact_message_seconds(method, cluster, nbytes)

        return memo
    names, intercept_of, slope_of = affine
    values = cluster.values()
    args = [float(values[name]) for name in names]
    intercept, slope = float(intercept_of(*args)), float(slope_of(*args))

    def affine_comm(nbytes: float) -> float:
        return 0.0 if nbytes <= 0 else intercept + slope * nbytes

    return affine_comm


def predict_fast(
    workload: Workload, batch_size: int, step_time_s: float, cluster: Cluster, method: Method
) -> Prediction:
    """``costmodels.dp.predict.predict`` with :func:`fast_comm` (same inputs, same Prediction)."""
    return predict(
        workload, batch_size, step_time_s, cluster, method, comm=fast_comm(method, cluster)
    )


def compression_share(method: Method, cluster: Cluster, prediction: Prediction) -> float:
    """Fraction of the communication stream's busy time spent compressing (0 .. 1).

    ``message_seconds`` charges a compressed message its exchange plus its compress/decompress
    kernel time (``exchange_time``); this sums the kernel part over the messages sent.
    """
    if method.compression == "none" or cluster.p == 1:
        return 0.0
    values = cluster.values()
    alpha, beta = exchange_link(method, cluster)  # the link message_seconds prices it on
    # Both sums run over the timeline's period (H steps for local SGD), so their ratio is the
    # per-step share too.
    period = sum(seg.duration_s for seg in prediction.result.comm_segments())
    if not period > 0:
        return 0.0
    kernel = sum(
        exchange_time(
            method.compression,
            seg.bytes,
            cluster.p,
            alpha,
            beta,
            values["gamma"],
            kernel_memory_bandwidth(cluster.gpu),  # as message_seconds prices it
        )[1]
        for seg in prediction.result.comm_segments()
        if seg.bytes > 0
    )
    return min(1.0, kernel / period)


@cache
def _record_lossless(record_id: str) -> bool | None:
    """The ``lossless`` field of one record, read from its YAML alone (loading and checking the
    whole taxonomy takes seconds; this page only needs one field)."""
    import yaml

    from taxonomy.loader import RECORDS_DIR
    from taxonomy.schema import Record

    path = next(RECORDS_DIR.glob(f"*/{record_id}.yaml"))
    return Record.model_validate(yaml.safe_load(path.read_text(encoding="utf-8"))).lossless


def lossless(label: str) -> bool:
    """Whether the method trains exactly as dense SGD does: no compression, or a compressor whose
    record says ``lossless: true`` (issue 30: a lossy method was recommended without a word)."""
    method = parse_method(label)
    if method.compression == "none":
        return True
    return bool(_record_lossless(spec_record(method.compression)))


def display_name(label: str) -> str:
    """``describe`` plus " (lossy)" for a method that changes what training computes."""
    return describe(label) + ("" if lossless(label) else " (lossy)")


def describe(label: str) -> str:
    """A readable menu entry for a method label."""
    method = parse_method(label)
    where = (
        f"{method.collective} all-reduce"
        if method.architecture == "allreduce"
        else f"parameter server ({method.ps_placement}"
        + (f", {method.ps_servers} servers)" if method.ps_servers else ", 1 server/node)")
    )
    squeeze = "" if method.compression == "none" else f" + {method.compression}"
    return f"{method.schedule.upper()} · {where}{squeeze}"
