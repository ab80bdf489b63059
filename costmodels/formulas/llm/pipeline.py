"""Pipeline parallelism: what a step costs beyond the ideal m (t_f + t_b) on p stages.

GPipe (Huang et al. 2019) and 1F1B (PipeDream-Flush, Narayanan et al. 2021) idle for
(p - 1)(t_f + t_b) per step (bubble fraction (p-1)/m); the interleaved schedule with v virtual
stages per GPU cuts the idle time to (p - 1)(t_f + t_b)/v (Narayanan et al. SC'21, Section
2.2). The activation of one micro-batch (n bytes) crosses every stage boundary once forward and
its gradient once backward; on the critical path that adds 2 (p - 1) messages (v times more
boundaries with interleaving, each still one message).
"""

from __future__ import annotations

import sympy as sp

from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, beta, m, n, p, t_b, t_f, v

STEP = t_f + t_b
MESSAGE = alpha + n * beta

GPIPE = CostModel(
    id="gpipe",
    title="Pipeline bubble and boundary transfers (GPipe / 1F1B)",
    variants={
        "bubble": Variant(
            time=(p - 1) * STEP + 2 * (p - 1) * MESSAGE,
            bytes_sent={"middle-stage": 2 * m * n * sp.Min(1, p - 1)},
            description="(p-1) idle micro-batch slots plus fill/drain transfers on the path",
        )
    },
    source=(
        "Y. Huang et al., 'GPipe: efficient training of giant neural networks using pipeline "
        "parallelism', NeurIPS 2019; bubble (p-1)/m as in D. Narayanan et al., SC'21, "
        "arXiv:2104.04473, Section 2.2."
    ),
    assumptions=(
        "equal stages; t_f and t_b are one micro-batch's forward and backward on one stage",
        "transfers of the other micro-batches overlap with compute",
    ),
)

INTERLEAVED = CostModel(
    id="megatron-3d",
    title="Interleaved 1F1B pipeline bubble (PTD-P)",
    variants={
        "interleaved-1f1b": Variant(
            time=(p - 1) * STEP / v + 2 * (p - 1) * MESSAGE,
            bytes_sent={"middle-stage": 2 * m * v * n * sp.Min(1, p - 1)},
            description="bubble (p-1)(t_f+t_b)/v; v times more boundary crossings",
        )
    },
    source=(
        "D. Narayanan et al., 'Efficient large-scale language model training on GPU clusters "
        "using Megatron-LM', SC'21, arXiv:2104.04473, Section 2.2.2."
    ),
    assumptions=(
        "m is a multiple of p (the schedule's requirement)",
        "each GPU holds v chunks of layers/(p v) layers; t_f, t_b are per GPU (all its chunks)",
        "transfers of the other micro-batches overlap with compute",
    ),
)

MODELS = [GPIPE, INTERLEAVED]
