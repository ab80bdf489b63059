"""Failures and checkpoints: how much of a training job's wall-clock time survives its failures.

From a model and its parallel layout to the expected goodput, one step per module:

- :mod:`~costmodels.goodput.sources`: the published failure and storage figures behind every
  default (Llama 3's interruption counts, its storage), and the estimates, each with its reason;
- :mod:`~costmodels.goodput.checkpoint_size`: bytes of one checkpoint (weights + optimizer
  states, ZeRO shards) from costmodels.llm.memory's accounting;
- :mod:`~costmodels.goodput.write_modes`: synchronous, asynchronous (CheckFreq) and in-memory
  (GEMINI) writes, and what each blocks;
- :mod:`~costmodels.goodput.interval`: Young's (1974), Daly's (2006) and the exact optimal
  checkpoint interval;
- :mod:`~costmodels.goodput.goodput`: Daly's expected wall-clock time, goodput, Young's split of
  the waste;
- :mod:`~costmodels.goodput.prediction` and :mod:`~costmodels.goodput.what_if`: one prediction,
  and the table over scale x storage x interval x mode;
- :mod:`~costmodels.goodput.simulate`: a Monte-Carlo simulation the tests hold the closed forms
  against;
- :mod:`~costmodels.formulas.goodput`: the registered sympy cost models
  (periodic-checkpointing, checkfreq, gemini-ckpt).

This package imports numpy only (formulas imports sympy, on demand).
"""

from costmodels.goodput.checkpoint_size import CheckpointSize, checkpoint_size
from costmodels.goodput.goodput import expected_goodput, job_mtbf_s, wall_time_per_work
from costmodels.goodput.interval import (
    daly_interval,
    exact_interval,
    optimal_interval,
    young_interval,
)
from costmodels.goodput.prediction import GoodputPrediction, predict_goodput
from costmodels.goodput.what_if import what_if
from costmodels.goodput.write_modes import MODES, Bandwidths, CheckpointCost, checkpoint_cost

__all__ = [
    "MODES",
    "Bandwidths",
    "CheckpointCost",
    "CheckpointSize",
    "GoodputPrediction",
    "checkpoint_cost",
    "checkpoint_size",
    "daly_interval",
    "exact_interval",
    "expected_goodput",
    "job_mtbf_s",
    "optimal_interval",
    "predict_goodput",
    "wall_time_per_work",
    "what_if",
    "young_interval",
]
