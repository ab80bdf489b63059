"""The requests a serving simulation replays: when each arrives, its prompt and output lengths.

``concurrency=N`` (``mode="server"`` without a rate) is a closed loop: N clients each send a
request, wait for its last token and send the next at once (AIPerf's concurrency mode, ``vllm
bench serve --max-concurrency`` with every request queued); the engine sets the arrivals.
``mode="offline"`` sends every request at time 0 (trtllm-bench's and MLPerf Offline's
"infinite rate": the engine always has work queued). ``mode="server"`` draws arrivals from a
Poisson process of ``rate`` requests per second (independent exponential gaps, as vLLM's
``benchmark_serving.py --request-rate`` and MLPerf Server's load generator send them), from a
private ``numpy.random.Generator`` seeded by ``seed``, so a run is reproducible and touches no
global state. Lengths are fixed, or drawn with replacement from a measured list (a file of
positive integers, one per line or separated by commas/spaces; a line starting with ``#`` is a
comment), e.g. the prompt lengths of a trace.

``range_ratio`` r > 0 draws each fixed length L uniformly from the whole numbers in
[floor(L (1 - r)), ceil(L (1 + r))], as ``vllm bench serve --dataset-name random
--random-range-ratio r`` samples its input and output lengths (vLLM's benchmark docs: "a
symmetric sampling range [length * (1 - range_ratio), length * (1 + range_ratio)]", default 0).

``prefix_len`` tokens at the start of every prompt are the same for all requests (a system
prompt); with the engine's prefix caching they are computed and stored once.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from costmodels.limits import MAX_SEQUENCE, check_count, read_text_bounded
from costmodels.units import ascii_whole

MODES: tuple[str, ...] = ("offline", "server")
MAX_REQUESTS = 100_000  # a simulation of this many takes tens of seconds at most
MAX_DIST_VALUES = 100_000
_SPLIT = re.compile(r"[\s,;]+")


@dataclass(frozen=True)
class RequestSet:
    arrival_s: np.ndarray  # float64, non-decreasing
    prompt: np.ndarray  # int64 tokens
    output: np.ndarray  # int64 tokens (>= 1)
    prefix_len: int = 0  # shared prompt prefix, tokens
    # the prompt arrives in the cache with its first token already out (a decode instance of
    # disaggregated serving receives the prefill instance's KV cache)
    cached_prompt: bool = False
    # closed loop: this many requests in flight, the next sent when one finishes (0: open loop,
    # the arrivals above); arrival_s is then 0 for the first ones and inf for the rest
    concurrency: int = 0

    def __len__(self) -> int:
        return int(self.arrival_s.size)


def read_lengths(path: str | Path, flag: str) -> np.ndarray:
    """Positive integer lengths from ``path``; ValueError naming ``flag``, the file and the item."""
    text = read_text_bounded(path, flag)
    values: list[int] = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        for item in filter(None, _SPLIT.split(line)):
            try:  # costmodels.units' one rule: ASCII digits only (no '1_5', no '١٦')
                value = ascii_whole(item)
            except ValueError:
                raise ValueError(
                    f"{flag} {path}: line {number}: {item[:20]!r} is not a "
                    "positive whole number of tokens (ASCII digits 0-9)"
                ) from None
            values.append(check_count(value, f"{flag} {path}: line {number}", MAX_SEQUENCE))
            if len(values) > MAX_DIST_VALUES:
                raise ValueError(f"{flag} {path}: more than {MAX_DIST_VALUES:,} lengths")
    if not values:
        raise ValueError(f"{flag} {path}: no lengths in the file")
    return np.asarray(values, dtype=np.int64)


def _lengths(
    fixed: int | None,
    dist: np.ndarray | None,
    n: int,
    rng: np.random.Generator,
    flag: str,
    range_ratio: float = 0.0,
) -> np.ndarray:
    if dist is not None:
        return rng.choice(dist, size=n, replace=True).astype(np.int64)
    if fixed is None:
        raise ValueError(f"{flag} (or its --...-dist file) is required")
    length = check_count(fixed, flag, MAX_SEQUENCE)
    if range_ratio:  # vLLM's random dataset: uniform whole lengths around the mean
        low = max(1, math.floor(length * (1 - range_ratio)))
        high = min(MAX_SEQUENCE, math.ceil(length * (1 + range_ratio)))
        return rng.integers(low, high + 1, size=n, dtype=np.int64)
    return np.full(n, length, dtype=np.int64)


def make_requests(
    n: int,
    *,
    mode: str = "offline",
    rate: float | None = None,
    prompt_len: int | None = None,
    output_len: int | None = None,
    prompt_dist: np.ndarray | None = None,
    output_dist: np.ndarray | None = None,
    prefix_len: int = 0,
    seed: int = 0,
    concurrency: int | None = None,
    range_ratio: float = 0.0,
) -> RequestSet:
    """``n`` requests (module docstring); every problem is one ValueError naming the flag."""
    check_count(n, "--requests", MAX_REQUESTS)
    if mode not in MODES:
        raise ValueError(f"--mode must be one of {list(MODES)}, got {mode!r}")
    rng = np.random.default_rng(seed)
    closed = 0
    if concurrency is not None:
        closed = check_count(concurrency, "--concurrency", MAX_REQUESTS)
        if mode != "server" or rate is not None:
            raise ValueError("--concurrency is a server load of its own: not with --rate or "
                             "--mode offline")  # fmt: skip
        arrival = np.where(np.arange(n) < closed, 0.0, np.inf)
    elif mode == "server":
        if rate is None or not (rate > 0 and rate != float("inf")):
            raise ValueError("--mode server needs --rate R > 0 (requests per second)")
        arrival = np.cumsum(rng.exponential(1.0 / rate, size=n))
    else:
        if rate is not None:
            raise ValueError("--rate needs --mode server (offline sends every request at once)")
        arrival = np.zeros(n)
    if not 0.0 <= range_ratio < 1.0:
        raise ValueError(f"--random-range-ratio must be in [0, 1), got {range_ratio}")
    prompt = _lengths(prompt_len, prompt_dist, n, rng, "--prompt-len", range_ratio)
    output = _lengths(output_len, output_dist, n, rng, "--output-len", range_ratio)
    if prefix_len < 0 or prefix_len > int(prompt.min()):
        raise ValueError(
            f"--prefix-len {prefix_len} must be between 0 and the shortest prompt "
            f"({int(prompt.min())} tokens)"
        )
    if int((prompt + output).max()) > MAX_SEQUENCE:
        raise ValueError(f"a prompt plus its output must be at most {MAX_SEQUENCE:,} tokens")
    return RequestSet(arrival, prompt, output, prefix_len, concurrency=closed)
