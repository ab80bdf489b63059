"""The goodput model as sympy: three registered cost models and the interval closed forms.

Each registered model's time is the expected wall-clock time of a job of ``T_s`` failure-free
compute seconds on ``p`` GPUs that each fail with mean time ``M_g`` (so the job's mean time
between failures is M = M_g / p), checkpointing every ``tau_c`` compute seconds, ``n`` bytes per
GPU per checkpoint. Variants: ``daly`` is Daly's complete cost function (exact for Poisson
failures, J. T. Daly, FGCS 22(3), 2006), ``young`` the first-order form (J. W. Young, CACM
17(9), 1974), T_s (1 + delta/tau + ((tau + delta)/2 + R)/M). What differs between the three
records is what blocks training and what stretches the restart
(:mod:`costmodels.goodput.write_modes`):

- ``periodic-checkpointing``: training waits for the write, delta = alpha + n beta (beta: the
  GPU's share of the storage bandwidth); the restart reads the checkpoint back,
  R_f + alpha + n beta;
- ``checkfreq`` (asynchronous): the copy to host memory, alpha_intra + n beta_intra (PCIe), runs
  beside the next step's forward and backward (t_ov) and only has to end before that step's
  weight update, so training stalls for the excess, delta = max(0, alpha_intra + n beta_intra -
  t_ov) (CheckFreq's ``weight_update`` waits for the snapshot before ``optimizer.step()``,
  msr-fiddle/CheckFreq src/cf_manager.py); the write to storage, alpha + n beta, runs behind
  training, and a failure inside it falls back one checkpoint: the restart grows by that write
  and by the read, R_f + 2 (alpha + n beta);
- ``gemini-ckpt`` (in-memory): the same snapshot blocks; alpha + n beta is now the copy to a
  peer's memory over the training network, which also serves the read after a failure.

The interval closed forms (:mod:`costmodels.goodput.interval`) are the sympy expressions
``YOUNG_INTERVAL``, ``DALY_INTERVAL`` and ``EXACT_INTERVAL`` over ``DELTA`` and ``MTBF``.
"""

from __future__ import annotations

import sympy as sp

from costmodels.model import CostModel, Variant
from costmodels.symbols import (
    M_g,
    R_f,
    T_s,
    alpha,
    alpha_intra,
    beta,
    beta_intra,
    n,
    p,
    t_ov,
    tau_c,
)

DELTA, MTBF = sp.symbols("delta M", positive=True)
YOUNG_INTERVAL = sp.sqrt(2 * DELTA * MTBF)
_XI = DELTA / (2 * MTBF)
DALY_INTERVAL = sp.Piecewise(
    (sp.sqrt(2 * DELTA * MTBF) * (1 + sp.sqrt(_XI) / 3 + _XI / 9) - DELTA, DELTA < 2 * MTBF),
    (MTBF, True),
)
EXACT_INTERVAL = MTBF * (1 + sp.LambertW(-sp.exp(-1 - DELTA / MTBF)))

YOUNG = "J. W. Young, A first order approximation to the optimum checkpoint interval, CACM 17(9)"
DALY = (
    "J. T. Daly, A higher order estimate of the optimum checkpoint interval for restart dumps, "
    "Future Generation Computer Systems 22(3):303-312, 2006"
)


def _variants(blocking: sp.Expr, restart: sp.Expr, what: str) -> dict[str, Variant]:
    mtbf = M_g / p
    daly = mtbf * sp.exp(restart / mtbf) * (sp.exp((tau_c + blocking) / mtbf) - 1) * T_s / tau_c
    young = T_s * (1 + blocking / tau_c + ((tau_c + blocking) / 2 + restart) / mtbf)
    volume = {"rank": n}  # bytes one GPU writes (or sends to its peer) per checkpoint
    return {
        "daly": Variant(daly, volume, f"Daly's complete model; {what}", False),
        "young": Variant(young, volume, f"Young's first-order model; {what}", False),
    }


_STORAGE = alpha + n * beta
_SNAPSHOT = alpha_intra + n * beta_intra
# Max(x, t) - t rather than Max(0, x - t): the unit check needs both arguments in seconds.
_SNAPSHOT_STALL = sp.Max(_SNAPSHOT, t_ov) - t_ov
_ASSUMPTIONS = (
    "failures of the p GPUs are independent Poisson processes of mean time M_g: the job fails "
    "with mean time M_g / p and any failure stops the whole job",
    "after a failure the job restarts (R_f) and resumes from the last durable checkpoint",
    "n = bytes the busiest GPU checkpoints; beta = 1 / its share of the write bandwidth",
)

PERIODIC = CostModel(
    id="periodic-checkpointing",
    title="Periodic synchronous checkpointing (Young / Daly interval)",
    variants=_variants(_STORAGE, R_f + _STORAGE, "training waits for the write to storage"),
    source=f"{DALY}; {YOUNG}, 1974",
    assumptions=(*_ASSUMPTIONS, "the checkpoint is read back at the write bandwidth"),
)
CHECKFREQ = CostModel(
    id="checkfreq",
    title="Asynchronous checkpointing (snapshot to host memory, persist in the background)",
    variants=_variants(
        _SNAPSHOT_STALL,
        R_f + 2 * _STORAGE,
        "training waits only for what of the GPU-to-host snapshot outlasts the next step's "
        "forward and backward",
    ),
    source=(
        "J. Mohan, A. Phanishayee, V. Chidambaram, CheckFreq: Frequent, Fine-Grained DNN "
        "Checkpointing, FAST'21 (two-phase checkpoint; the weight update waits for the snapshot: "
        f"msr-fiddle/CheckFreq src/cf_manager.py); cost function of {DALY}"
    ),
    assumptions=(
        *_ASSUMPTIONS,
        "beta_intra = 1 / the GPU-to-host copy rate (PCIe); the snapshot overlaps the next "
        "step's forward and backward (t_ov) and must end before its weight update: the stall "
        "is max(0, alpha_intra + n beta_intra - t_ov) (t_ov = 0: the whole copy stalls)",
        "the persist (alpha + n beta) ends before the next snapshot (tau_c >= alpha + n beta)",
        "a failure during the persist falls back one checkpoint: on average the restart redoes "
        "alpha + n beta more work (exact but for the job's first and last segment)",
    ),
)
GEMINI = CostModel(
    id="gemini-ckpt",
    title="In-memory checkpointing to a peer's CPU memory",
    variants=_variants(
        _SNAPSHOT, R_f + 2 * _STORAGE, "training waits for the snapshot; a peer keeps the copy"
    ),
    source=(
        "Z. Wang et al., GEMINI: Fast Failure Recovery in Distributed Training with In-Memory "
        f"Checkpoints, SOSP 2023 (checkpoints in CPU memory of other machines); cost function "
        f"of {DALY}"
    ),
    assumptions=(
        *_ASSUMPTIONS,
        "alpha, beta: the training network between two nodes (per GPU share); the copy to the "
        "peer and the read back after a failure both cross it",
        "some copy of every shard survives (the fall-back to remote storage is not modelled)",
    ),
)

MODELS = [PERIODIC, CHECKFREQ, GEMINI]
