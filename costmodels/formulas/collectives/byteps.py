"""BytePS summation service: the traffic split that minimises communication time.

p GPU machines each hold an n-byte gradient; S extra CPU machines run only the summation
service (Jiang et al., OSDI 2020, Section 4.1 and Theorem 1). Every GPU machine's summation
service owns x bytes of the model and every CPU machine's y bytes, with p x + S y = n. Pushes and
pulls are pipelined over partitions, so each link direction carries:

* a GPU machine: sends (n - x) of its gradient plus (p - 1) x of summed results: n + (p - 2) x;
* a CPU machine: sends its y summed bytes to the p GPU machines: p y.

Balancing the two gives x = (p - S) n / (p^2 + S p - 2 S) and the optimum time::

    T = 2 p (p - 1) n beta / (p^2 + S p - 2 S) + 2 alpha

which is ring all-reduce's 2 (p-1)/p n beta at S = 0 and a non-colocated parameter server's
n beta at S = p. More CPU machines than GPU machines cannot beat n beta (every GPU machine must
send its n bytes), so S is capped at p.
"""

from __future__ import annotations

import sympy as sp

from costmodels.model import CostModel, Variant
from costmodels.symbols import S, alpha, beta, n, p

CPU_MACHINES = sp.Min(S, p)  # beyond S = p extra CPU machines do not help
# The paper's denominator p^2 + S(p - 2) is at least p^2 for p >= 2; at p = 1 it is 1 - S,
# which vanishes at S = 1, so Max(., p) keeps the one-worker case at 0 / 1 = 0.
DENOMINATOR = sp.Max(p**2 + CPU_MACHINES * (p - 2), p)
LINK_BYTES = 2 * p * (p - 1) * n / DENOMINATOR  # per direction on the busiest link

MODEL = CostModel(
    id="byteps",
    title="BytePS summation service (optimal GPU/CPU traffic split)",
    variants={
        "summation-service": Variant(
            time=2 * sp.Min(1, p - 1) * alpha + LINK_BYTES * beta,
            # With the optimal split the GPU and CPU machines' links carry the same bytes.
            bytes_sent={"gpu-machine": LINK_BYTES, "cpu-machine": LINK_BYTES},
            description="optimal split between GPU-machine and CPU-machine summation services",
        )
    },
    source=(
        "Y. Jiang, Y. Zhu, C. Lan, B. Yi, Y. Cui and C. Guo, 'A unified architecture for "
        "accelerating distributed DNN training in heterogeneous GPU/CPU clusters', OSDI 2020, "
        "Section 4.1 (Theorem 1)."
    ),
    assumptions=(
        "every machine has one full-duplex link of bandwidth 1/beta on a non-blocking network",
        "push and pull are pipelined across partitions, so a link's two directions are used at "
        "once and the busier direction sets the time",
        "summation keeps up with the network (CPU summation with vector instructions, as the "
        "paper argues), so no gamma term; the optimizer update runs on the GPUs and is not counted",
        "intra-machine aggregation among a machine's GPUs is not included (p counts machines)",
        "one push/pull round trip pays 2 alpha",
    ),
)
