"""Parameter server push/pull with S server shards, on separate machines or colocated.

The n-byte model is split into S shards, one per server. In a BSP iteration each worker pushes
its gradient shard by shard to the S servers, each server sums the p contributions of its shard,
and each worker pulls the S summed shards back. Two placements are modelled:

* ``separate``: S server processes on machines of their own. A worker sends n bytes; a server
  receives and later sends p*n/S bytes, so the busiest link carries max(n, p*n/S) per phase.
* ``colocated`` (S <= p): the first S workers each also host one shard. A host keeps its own
  shard local, so the busiest link carries (p-1)*n/S per phase; with S = p this is the
  2(p-1)n/p of ring all-reduce with only two latency steps (BytePS, OSDI 2020, Table 1).
"""

from __future__ import annotations

import sympy as sp

from costmodels.model import CostModel, Variant
from costmodels.symbols import S, alpha, beta, gamma, n, p

SHARD = n / S
SUMMATION = (p - 1) * SHARD * gamma  # a server adds p shard-sized vectors

SEPARATE = Variant(
    time=2 * alpha + 2 * sp.Max(n, p * SHARD) * beta + SUMMATION,
    bytes_sent={"worker": n, "server": p * SHARD},
    description="S servers on their own machines; push then pull",
    free_at_one_worker=False,  # the servers are other machines even for a single worker
)

# With p = 1 nothing leaves the lone worker, so the latency term vanishes too.
COLOCATED = Variant(
    time=2 * sp.Min(1, p - 1) * alpha + 2 * (p - 1) * SHARD * beta + SUMMATION,
    bytes_sent={"host": n + (p - 2) * SHARD, "worker": n},
    description="the first S workers also host one shard each (S <= p)",
)

MODEL = CostModel(
    id="parameter-server",
    title="Parameter server (push/pull, S shards)",
    variants={"separate": SEPARATE, "colocated": COLOCATED},
    source=(
        "M. Li et al., 'Scaling distributed machine learning with the parameter server', OSDI "
        "2014 (architecture); per-iteration bandwidth terms as in Y. Jiang et al., 'A unified "
        "architecture for accelerating distributed DNN training in heterogeneous GPU/CPU "
        "clusters', OSDI 2020, Section 2."
    ),
    assumptions=(
        "every machine has one full-duplex link of bandwidth 1/beta; the switch is non-blocking",
        "push and pull are two phases that do not overlap (BytePS pipelines them across "
        "partitions, which halves the bandwidth term)",
        "within a phase all messages are in flight together, so a phase pays one latency alpha",
        "shards are equal (n/S bytes); with uneven shards the largest one sets the time",
        "colocated placement needs S <= p; servers only sum (optimizer update not counted)",
    ),
)
