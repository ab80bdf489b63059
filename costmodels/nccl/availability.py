"""Which (algorithm, protocol) pairs NCCL can run for an operation on a system, and why not.

The rules restate the conditions of NVIDIA/nccl src/graph/tuning.cc (ncclTopoTuneModel: which
algorithm serves which collective, which protocol each algorithm has, LL128's enabling, the
CollNet and NVLS switches), src/enqueue.cc (updateCollCostTable: CollNet and NVLS limits on local
ranks) and src/graph/search.cc (NVLS needs NVSwitches and compute capability >= 9.0):

* ring: all-reduce, all-gather, reduce-scatter, broadcast, reduce (broadcast and reduce are
  ring only);
* tree (double binary tree across nodes, chains inside a node): all-reduce only;
* collnet-direct / collnet-chain (SHARP in the network): all-reduce on several nodes with a
  SHARP network and at most 8 GPUs per node; direct also needs NVSwitches; direct also serves
  all-gather / reduce-scatter with one NIC per GPU;
* nvls (NVLink SHARP): all-reduce, all-gather, reduce-scatter on NVSwitch systems of compute
  capability >= 9.0 with 2+ GPUs per node; on several nodes only together with CollNet;
* nvls-tree: all-reduce on several nodes of such systems;
* pat: all-gather and reduce-scatter with one GPU per node (NCCL's PAT_ENABLE default);
* p2p: all-to-all and send/recv (grouped point-to-point; NCCL has no tuner entry for them).

NVLS, CollNet and PAT have the Simple protocol only; LL128 needs NVLink paths. Across nodes
the transport may narrow both (costmodels.nccl.transports: aws-ofi-nccl forces Simple on p4d;
Google's TCPX/TCPXO profiles set NCCL_ALGO=Ring or Ring,Tree and NCCL_PROTO=Simple).
"""

from __future__ import annotations

from collections.abc import Callable

from costmodels.nccl.constants import COLLNET_MAX_LOCAL_RANKS, NVLS_MAX_ARITY
from costmodels.nccl.system import NcclSystem

OPERATIONS = (
    "all-reduce", "all-gather", "reduce-scatter", "broadcast", "reduce", "all-to-all", "send-recv",
)  # fmt: skip
# NCCL's order (tuning.cc algorithm indices), used to break ties like its tuner; p2p last.
ALGORITHM_ORDER = ("tree", "ring", "collnet-direct", "collnet-chain", "nvls", "nvls-tree", "pat",
                   "p2p")  # fmt: skip
PROTOCOL_ORDER = ("ll", "ll128", "simple")
SERVES: dict[str, tuple[str, ...]] = {
    "ring": ("all-reduce", "all-gather", "reduce-scatter", "broadcast", "reduce"),
    "tree": ("all-reduce",),
    "collnet-direct": ("all-reduce", "all-gather", "reduce-scatter"),
    "collnet-chain": ("all-reduce",),
    "nvls": ("all-reduce", "all-gather", "reduce-scatter"),
    "nvls-tree": ("all-reduce",),
    "pat": ("all-gather", "reduce-scatter"),
    "p2p": ("all-to-all", "send-recv"),
}
_ALIASES = {"allreduce": "all-reduce", "allgather": "all-gather", "reducescatter":
            "reduce-scatter", "alltoall": "all-to-all", "sendrecv": "send-recv"}  # fmt: skip


def canonical_operation(name: str) -> str:
    """'alltoall', 'all_reduce', 'AllGather', 'sendrecv' ... -> the names of OPERATIONS."""
    if not isinstance(name, str):
        raise TypeError(f"operation must be a str, got {type(name).__name__}")
    plain = name.strip().lower().replace("_", "").replace("-", "").removesuffix("perf")
    for op in OPERATIONS:
        if op.replace("-", "") == plain:
            return op
    if plain in _ALIASES:
        return _ALIASES[plain]
    raise ValueError(f"unknown operation {name!r}; choose from {', '.join(OPERATIONS)}")


def why_not(op: str, algorithm: str, system: NcclSystem) -> str | None:
    """None when NCCL can run ``algorithm`` for ``op`` on ``system``, else the reason."""
    if algorithm not in SERVES:
        return f"unknown algorithm {algorithm!r}; choose from {', '.join(ALGORITHM_ORDER)}"
    if op not in SERVES[algorithm]:
        return f"{algorithm} does not implement {op} (it serves {', '.join(SERVES[algorithm])})"
    fabric, g, nodes = system.fabric, system.gpus_per_node, system.nodes
    if algorithm.startswith("collnet"):
        if not system.collnet:
            return f"{algorithm} needs a network that reduces in its switches (SHARP, --collnet)"
        if nodes < 2:
            return f"{algorithm} reduces across nodes; a single node has no network to use"
        if g > COLLNET_MAX_LOCAL_RANKS:
            return f"{algorithm} supports at most {COLLNET_MAX_LOCAL_RANKS} GPUs per node"
        if algorithm == "collnet-direct" and fabric.kind != "nvswitch":
            return "collnet-direct needs NVSwitches inside the node"
        if op != "all-reduce" and system.nics < g:
            return f"collnet {op} needs one NIC per GPU ({system.nics} NICs for {g} GPUs)"
    if algorithm in ("nvls", "nvls-tree"):
        if not fabric.nvls:
            return (f"{algorithm} needs NVLink SHARP (third-generation NVSwitch or later, "
                    f"H100/H200/B200/GB200); {fabric.name} has none")  # fmt: skip
        if g < 2:
            return f"{algorithm} needs at least 2 GPUs per node (2 NVLS channels)"
        if op != "all-reduce" and g > NVLS_MAX_ARITY:
            return f"nvls {op} supports at most {NVLS_MAX_ARITY} GPUs per node"
        if algorithm == "nvls" and nodes > 1 and not system.collnet:
            return "nvls on several nodes runs only together with CollNet (SHARP network)"
        if algorithm == "nvls" and nodes > 1 and op != "all-reduce" and system.nics < g:
            return f"nvls {op} across nodes needs one NIC per GPU"
        if algorithm == "nvls-tree" and nodes < 2:
            return "nvls-tree joins several nodes; on one node use nvls"
    if algorithm == "pat" and g != 1:
        return f"pat runs with one GPU per node only (NCCL's default); this system has {g}"
    transport = system.transport
    if nodes > 1 and algorithm != "p2p" and transport.algorithms is not None:
        if algorithm not in transport.algorithms:
            return (f"{transport.name} runs {', '.join(transport.algorithms)} across nodes "
                    f"({transport.plugin}'s NCCL profile)")  # fmt: skip
    return None


def protocols_for(algorithm: str, system: NcclSystem) -> tuple[str, ...]:
    """The protocols NCCL may use with ``algorithm`` on ``system``."""
    usable = ("simple",)
    if algorithm in ("ring", "tree"):
        usable = PROTOCOL_ORDER if system.ll128_intra else ("ll", "simple")
    if system.nodes > 1:
        usable = tuple(proto for proto in usable if proto in system.transport.protocols)
    return usable


def candidates(
    op: str, system: NcclSystem, algorithm: str = "auto", protocol: str = "auto"
) -> list[tuple[str, str]]:
    """(algorithm, protocol) pairs to price, in NCCL's tie-breaking order.

    A forced algorithm or protocol that cannot run raises ValueError naming the reason.
    """
    return ordered_pairs(canonical_operation(op), system, algorithm, protocol, ALGORITHM_ORDER,
                         why_not, _protocols_or_p2p, " here")  # fmt: skip


def _protocols_or_p2p(algorithm: str, system: NcclSystem) -> tuple[str, ...]:
    return protocols_for(algorithm, system) if algorithm != "p2p" else ("simple",)


def ordered_pairs(
    op: str,
    system: NcclSystem,
    algorithm: str,
    protocol: str,
    order: tuple[str, ...],
    reason_not: Callable[[str, str, NcclSystem], str | None],
    protocols: Callable[[str, NcclSystem], tuple[str, ...]],
    where: str,
    note: str = "",
) -> list[tuple[str, str]]:
    """(algorithm, protocol) pairs in a library's ``order`` (NCCL's here, RCCL's in
    costmodels.nccl.rccl): every algorithm ``reason_not`` allows, or the forced one (ValueError
    with its reason), times its ``protocols`` or the forced protocol (ValueError naming what
    each algorithm has; ``where`` ends the message's place, e.g. " with RCCL here", and ``note``
    follows the list)."""
    if algorithm != "auto":
        reason = reason_not(op, algorithm, system)
        if reason:
            raise ValueError(f"algorithm {algorithm!r} for {op}: {reason}")
        algorithms = [algorithm]
    else:
        algorithms = [a for a in order if reason_not(op, a, system) is None]
    if protocol != "auto" and protocol not in PROTOCOL_ORDER:
        raise ValueError(f"unknown protocol {protocol!r}; choose from auto, ll, ll128, simple")
    pairs = [(a, p) for a in algorithms for p in protocols(a, system) if protocol in ("auto", p)]
    if not pairs:
        allowed = "; ".join(f"{a} has {', '.join(protocols(a, system))}" for a in algorithms)
        raise ValueError(f"protocol {protocol!r} cannot run {op}{where}: {allowed}{note}")
    return pairs
