"""Pipeline parallelism: what a step costs beyond the ideal m (t_f + t_b) on p stages.

GPipe (Huang et al. 2019) and 1F1B (PipeDream-Flush, Narayanan et al. 2021) idle for
(p - 1)(t_f + t_b) per step (bubble fraction (p-1)/m); the interleaved schedule with v virtual
stages per GPU cuts the idle time to (p - 1)(t_f + t_b)/v (Narayanan et al. SC'21, Section
2.2). The activation of one micro-batch (n bytes) crosses every stage boundary once forward and
its gradient once backward, one message c = alpha + n beta each.

What those messages add to the step is priced as the schedules run: a discrete-event simulation
of each order (tests/costmodels/test_llm_comm_pipeline.py: an operation starts when its device
is free and its producer has finished, plus c when the producer sat on another device) gives,
exactly for equal stages and any t_f, t_b, c,

* GPipe (all forwards, then all backwards): 2 (p-1) c, the fill and the drain;
* 1F1B (Megatron-LM's order: p-1-d warm-up forwards on stage d, then one forward and one
  backward in turn): 2 [(p-1) + floor((m-1)(p-1)/p)] c. Each backward waits for the gradient
  from the next stage, so in the steady state every round trip of the pipeline, p micro-batches,
  exposes its 2 (p-1) messages once more: for m >> p about 2 (p-1)(1 + (m-1)/p) c, against
  GPipe's 2 (p-1) c (GPipe keeps all m activations instead of at most p);
* interleaved 1F1B: at least 2 (p v - 1) c (the first micro-batch's trip through the p v
  stages and back); more as m grows, by an amount that depends on c against t_f and t_b, so
  the model states that bound and says so.
"""

from __future__ import annotations

import sympy as sp

from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, beta, m, n, p, t_b, t_f, v

STEP = t_f + t_b
MESSAGE = alpha + n * beta

# 1F1B's exposed boundary messages per step (see the module docstring).
ONE_F_ONE_B_MESSAGES = 2 * ((p - 1) + sp.floor((m - 1) * (p - 1) / p))
VOLUME = {"middle-stage": 2 * m * n * sp.Min(1, p - 1)}

GPIPE = CostModel(
    id="gpipe",
    title="Pipeline bubble and boundary transfers (GPipe and 1F1B, as the schedules run)",
    variants={
        "gpipe": Variant(
            time=(p - 1) * STEP + 2 * (p - 1) * MESSAGE,
            bytes_sent=VOLUME,
            description="GPipe order: (p-1) idle micro-batch slots, fill and drain transfers",
        ),
        "1f1b": Variant(
            time=(p - 1) * STEP + ONE_F_ONE_B_MESSAGES * MESSAGE,
            bytes_sent=VOLUME,
            description="1F1B order: same bubble; 2[(p-1) + floor((m-1)(p-1)/p)] transfers exposed",
        ),
    },
    source=(
        "Y. Huang et al., 'GPipe: efficient training of giant neural networks using pipeline "
        "parallelism', NeurIPS 2019; bubble (p-1)/m and the 1F1B order as in D. Narayanan et "
        "al., SC'21, arXiv:2104.04473, Section 2.2; transfer terms from a discrete-event "
        "simulation of both orders (tests/costmodels/test_llm_comm_pipeline.py)."
    ),
    assumptions=(
        "equal stages; t_f and t_b are one micro-batch's forward and backward on one stage",
        "each boundary message (alpha + n beta) delays only the operation that needs it; a "
        "device computes while its messages travel, and messages do not contend",
        "transfer terms exact for these orders (GPipe: all forwards then all backwards; 1F1B: "
        "Megatron-LM's warm-up, steady and cool-down phases), any t_f, t_b, m and p",
    ),
)

INTERLEAVED = CostModel(
    id="megatron-3d",
    title="Interleaved 1F1B pipeline bubble (PTD-P)",
    variants={
        "interleaved-1f1b": Variant(
            time=(p - 1) * STEP / v + 2 * (p * v - 1) * sp.Min(1, p - 1) * MESSAGE,
            bytes_sent={"middle-stage": 2 * m * v * n * sp.Min(1, p - 1)},
            description="bubble (p-1)(t_f+t_b)/v; transfers: the lower bound 2(pv-1)(alpha + "
            "n beta); v times more boundary crossings",
        )
    },
    source=(
        "D. Narayanan et al., 'Efficient large-scale language model training on GPU clusters "
        "using Megatron-LM', SC'21, arXiv:2104.04473, Section 2.2.2."
    ),
    assumptions=(
        "m is a multiple of p (the schedule's requirement)",
        "each GPU holds v chunks of layers/(p v) layers; t_f, t_b are per GPU (all its chunks)",
        "transfers: a lower bound, the first micro-batch's 2 (p v - 1) crossings of the p v "
        "stages; the simulated schedule exposes more as m grows (how much depends on alpha + "
        "n beta against t_f and t_b)",
    ),
)

MODELS = [GPIPE, INTERLEAVED]
