"""Zero-bubble (ZB-H1) and DualPipe pipeline schedules: time beyond the ideal m (t_f + t_b).

Both split a stage's backward pass of one micro-batch (t_b) into the input gradient, which the
previous stage waits for, and the weight gradient (t_w), which may run later to fill idle slots.

* ``zero-bubble-pp`` (P. Qi, X. Wan, G. Huang and M. Lin, "Zero Bubble Pipeline Parallelism",
  ICLR 2024, arXiv:2401.10241), handcrafted schedule ZB-H1: 1F1B order, but stage d (0-based)
  delays each weight gradient by d micro-batches, so every stage holds at most p micro-batches
  (1F1B's peak on the first stage). Bubble (p-1)(t_f + t_b - 2 t_w), a third of 1F1B's when
  forward, input-gradient and weight-gradient passes take equal time. A discrete-event
  simulation of that order (tests/costmodels/test_recent_pipeline_schedules.py) reproduces the
  bubble exactly when t_w <= t_f and t_w <= t_b - t_w, and shows that a boundary transfer of
  c = alpha + n beta adds 4 (p-1) c once m > p and c <= t_w / 2 (the dependent
  backward-forward exchanges leave no slack to hide it).
* ``dualpipe`` (DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437; schedule code
  deepseek-ai/DualPipe): two pipelines run in opposite directions over the same p ranks (each
  rank holds two stages), and forward and backward chunks of different micro-batches run
  overlapped (t_fb). Published bubble (p/2 - 1)(t_fb + t_b - 3 t_w). The schedule exists only
  for even p (ranks r and p-1-r hold the two halves) and an even m >= 2p, as DualPipe.step
  asserts; the model states these as requirements, so evaluating it at p = 3 is an error rather
  than a number for a schedule that does not exist. The simulation of
  the repository's eight-step order matches it exactly when t_f = t_b - t_w, t_w <= t_f and
  max(t_f, t_b) <= t_fb <= t_f + t_b, i.e. the equal-chunk regime the table assumes; transfers
  are charged as fill and drain only, 2 (p-1) c, a lower bound (the simulation exposes more when
  transfers are not hidden inside the overlapped chunks).

Volumes: a micro-batch's activation (n bytes) crosses every stage boundary once forward and its
gradient once backward.
"""

from __future__ import annotations

import sympy as sp

from costmodels.formulas.llm.pipeline import MESSAGE as TRANSFER  # one boundary crossing
from costmodels.model import CostModel, Requirement, Variant
from costmodels.symbols import m, n, p, t_b, t_f, t_fb, t_w

# Max(x, c) - c rather than Max(0, x - c): the unit check needs both arguments in seconds.

ZERO_BUBBLE = CostModel(
    id="zero-bubble-pp",
    title="Zero-bubble pipeline (ZB-H1): bubble and exposed boundary transfers",
    variants={
        "zb-h1": Variant(
            time=(p - 1) * (sp.Max(t_f + t_b, 2 * t_w) - 2 * t_w) + 4 * (p - 1) * TRANSFER,
            bytes_sent={"middle-stage": 2 * m * n * sp.Min(1, p - 1)},
            description="bubble (p-1)(t_f + t_b - 2 t_w) at 1F1B's peak memory",
        )
    },
    source=(
        "P. Qi, X. Wan, G. Huang and M. Lin, 'Zero Bubble Pipeline Parallelism', ICLR 2024, "
        "arXiv:2401.10241 (ZB-H1); bubble in DeepSeek-AI's notation (B = full backward) as in "
        "the bubble table of github.com/deepseek-ai/DualPipe."
    ),
    assumptions=(
        "equal stages; t_b is a micro-batch's whole backward on one stage, t_w its "
        "weight-gradient part; exact for t_w <= t_f and t_w <= t_b - t_w",
        "m > p micro-batches; the boundary transfer alpha + n beta is at most t_w / 2",
        "n = bytes of one micro-batch's activation at a stage boundary",
    ),
)

HALF_RANKS_LESS_ONE = sp.Max(0, p / 2 - 1)

DUALPIPE = CostModel(
    id="dualpipe",
    title="DualPipe: bidirectional pipeline bubble with overlapped forward-backward chunks",
    variants={
        "dualpipe": Variant(
            time=HALF_RANKS_LESS_ONE * (sp.Max(t_fb + t_b, 3 * t_w) - 3 * t_w)
            + 2 * (p - 1) * TRANSFER,
            bytes_sent={
                "end-rank": m * n * sp.Min(1, p - 1),
                "inner-rank": 2 * m * n * sp.Max(0, sp.Min(1, p - 2)),
            },
            description="bubble (p/2-1)(F&B + B - 3W); fill and drain transfers (lower bound)",
        )
    },
    source=(
        "DeepSeek-AI, 'DeepSeek-V3 Technical Report', arXiv:2412.19437 (DualPipe); schedule "
        "and bubble table of github.com/deepseek-ai/DualPipe."
    ),
    assumptions=(
        "p even, m even and m >= 2p (the implementation's requirements); each rank holds two "
        "stages, one per direction, so parameters are stored twice",
        "t_fb: one forward and one backward chunk of different micro-batches run together; the "
        "bubble is exact when t_f = t_b - t_w, t_w <= t_f and max(t_f, t_b) <= t_fb <= t_f + t_b",
        "transfers: fill and drain only, 2 (p-1)(alpha + n beta); steady-state transfers are "
        "assumed hidden inside the overlapped chunks",
        "m micro-batches in all (m/2 per direction); n = bytes of one activation at a boundary",
    ),
    requires=(
        Requirement(sp.Eq(sp.Mod(p, 2), 0), "an even number of ranks p (DualPipe.step asserts it)"),
        Requirement(
            sp.And(sp.Eq(sp.Mod(m, 2), 0), sp.Ge(m, 2 * p)),
            "an even number of micro-batches m >= 2p (DualPipe.step asserts it)",
        ),
    ),
)

MODELS = [ZERO_BUBBLE, DUALPIPE]
