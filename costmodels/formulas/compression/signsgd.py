"""signSGD with majority vote (Bernstein et al.): 1-bit signs up, 1-bit majority back.

Workers send the sign of every coordinate (b = 1 bit) to a parameter server, which counts the
votes and returns only the sign of the sum, again one bit per coordinate. We model the parameter
server, the paper's own scheme, rather than an all-gather: the reply is compressed too, so a
server that owns a shard of the vote moves each bit once up and once down, while an all-gather
makes every worker receive all p - 1 sign vectors ((p - 1) d b / 8 bytes, growing with p).

* ``sharded-ps`` (default): every worker hosts 1/p of the vote (colocated, S = p). Per link,
  (p-1)/p of the sign vector goes up and (p-1)/p comes back, one latency per phase:
  T = 2 alpha + 2 (p-1)/p d b/8 beta + (p-1)/p d w_v gamma + gamma_c d w_v.
* ``single-server``: one worker hosts the whole vote, as in the paper's system ("the parameter
  server housed entirely on one machine"); its link carries p - 1 sign vectors each way:
  T = 2 alpha + 2 (p-1) d b/8 beta + (p-1) d w_v gamma + gamma_c d w_v.
Counting votes is charged as adding decoded values (gamma per dense byte).
"""

from __future__ import annotations

from costmodels.formulas.compression._collectives import ACTIVE, bits_to_bytes, compute_time
from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, b, beta, d, gamma, p, w_v

BITS_PER_ELEMENT = 1  # the value to pass as b
SIGNS = bits_to_bytes(d * b)

SHARDED = Variant(
    time=2 * ACTIVE * alpha
    + 2 * (p - 1) / p * SIGNS * beta
    + (p - 1) / p * d * w_v * gamma
    + compute_time(d * w_v),
    bytes_sent={"rank": 2 * (p - 1) / p * SIGNS},
    description="vote sharded over all workers (S = p): push sign shards, pull majority shards",
)

SINGLE = Variant(
    time=2 * ACTIVE * alpha
    + 2 * (p - 1) * SIGNS * beta
    + (p - 1) * d * w_v * gamma
    + compute_time(d * w_v),
    bytes_sent={"server": (p - 1) * SIGNS, "worker": ACTIVE * SIGNS},
    description="one worker hosts the whole vote: p - 1 sign vectors in, p - 1 majorities out",
)

MODEL = CostModel(
    id="signsgd",
    title="signSGD with majority vote (parameter server)",
    variants={"sharded-ps": SHARDED, "single-server": SINGLE},
    source=(
        "J. Bernstein, Y.-X. Wang, K. Azizzadenesheli and A. Anandkumar, 'signSGD: compressed "
        "optimisation for non-convex problems', ICML 2018, arXiv:1802.04434; the distributed "
        "system with the server on one machine: J. Bernstein, J. Zhao, K. Azizzadenesheli and "
        "A. Anandkumar, 'signSGD with majority vote is communication efficient and fault "
        "tolerant', ICLR 2019, arXiv:1810.05291."
    ),
    assumptions=(
        "evaluate with b = 1 (one sign bit per coordinate, packed)",
        "the servers are colocated with workers, so p = 1 communicates nothing",
        "within a phase all messages are in flight together: one latency per phase",
        "gamma_c: sign packing, calibrated per dense byte",
    ),
)
