"""SHARP in-network all-reduce: switches sum the vectors on the way up a tree.

Each of the p hosts streams its n bytes to its leaf switch; the switches add the streams of their
children and pass one stream up; the root's sum flows back down to every host (Graham et al.
2016). A host therefore sends n bytes and receives n bytes whatever p is, and the sums happen in
the switch ALUs, not on the hosts.

* ``pipelined`` (default): the vector is streamed in chunks, so on a full-duplex host link the
  upward stream and the returning result overlap: T = 2 alpha + n beta.
* ``store-and-forward``: the result starts down only after the whole sum is known:
  T = 2 alpha + 2 n beta.

alpha here is the one-way latency of a trip through the switch tree (host to root), paid once up
and once down. With one host (p = 1) nothing is sent.
"""

from __future__ import annotations

import sympy as sp

from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, beta, n, p

ANY_PEER = sp.Min(1, p - 1)  # a single host has nothing to reduce

MODEL = CostModel(
    id="sharp",
    title="SHARP in-network aggregation (switch-tree all-reduce)",
    variants={
        "pipelined": Variant(
            time=ANY_PEER * (2 * alpha + n * beta),
            bytes_sent={"host": ANY_PEER * n},
            description="chunks streamed up and the sum streamed down at once",
        ),
        "store-and-forward": Variant(
            time=ANY_PEER * (2 * alpha + 2 * n * beta),
            bytes_sent={"host": ANY_PEER * n},
            description="the sum goes down only after the whole vector went up",
        ),
    },
    source=(
        "R. L. Graham et al., 'Scalable Hierarchical Aggregation Protocol (SHArP): a hardware "
        "architecture for efficient data reduction', COMHPC workshop at SC16, 2016, "
        "doi:10.1109/comhpc.2016.006."
    ),
    assumptions=(
        "the switch ALUs add at line rate, so there is no gamma term on the hosts",
        "alpha is the host-to-root latency of the switch tree (its depth folded in), paid up "
        "and down",
        "pipelined: chunks small against n, so the fill of the pipeline (one chunk's beta) is "
        "left out; the host's send and receive directions overlap on a full-duplex link",
        "the switch tree has enough capacity that every host streams at its link rate 1/beta; "
        "switch resources (groups, concurrent reductions, data types) are not modelled",
    ),
)
