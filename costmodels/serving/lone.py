"""One request (or one static batch) alone on an engine, priced by the engine's own iteration
cost (costmodels.serving.iteration): the figures predict-serving prints without a load and
plan-serving screens deployments with, so that they equal what the request simulation gives for
a lone request (one answer per question).

* first token: the prompt's prefill in budget-sized chunks (whole without chunked prefill),
  each chunk one iteration that also samples when it is the last;
* each further token: one decode iteration of ``batch`` sequences at ``context`` cached
  positions each (the simulation's TPOT of a lone request averages contexts prompt + 1 to
  prompt + output - 1; attention is affine in the context, so the mean context gives the mean).
"""

from __future__ import annotations

import math

from costmodels.serving.engine import EngineConfig
from costmodels.serving.iteration import Batch, IterationCost


def first_token_s(cost: IterationCost, engine: EngineConfig, prompt: float) -> float:
    """Seconds from an idle engine receiving a ``prompt``-token request to its first token."""
    ttft, left, done = 0.0, float(prompt), 0.0
    while left > 0:
        q = min(left, engine.max_batched_tokens) if engine.chunked_prefill else left
        b = Batch(
            tokens=int(q),
            sampled=1 if q >= left else 0,
            seqs=1,
            prefill_tokens=int(q),
            prefill_pairs=q * (done + (q + 1) / 2),
            prefill_keys=done + q,
            prefill_blocks=math.ceil(q / 128),
        )
        ttft += cost.seconds(b)
        left, done = left - q, done + q
    return ttft


def decode_step_s(cost: IterationCost, batch: int, context: float) -> float:
    """Seconds of one decode iteration of ``batch`` sequences, ``context`` positions each."""
    step = Batch(tokens=batch, sampled=batch, seqs=batch, decode_seqs=batch,
                 decode_context=batch * (context + 1))  # fmt: skip
    return cost.seconds(step)
