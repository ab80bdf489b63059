"""The running set of a simulated engine: the sequences it has admitted, as parallel arrays in
admission order (the first is the oldest), so that one iteration's bookkeeping is a handful of
numpy operations whatever the batch size.

Per sequence: its request id, the tokens it must prefill (its prompt, or prompt plus what it
had generated when it was preempted and is recomputed), how many of those are computed, the
tokens it has generated, its output length, the tokens in its cache and the KV blocks it holds
(under the ``reserve`` policy: the blocks reserved for its whole life).
"""

from __future__ import annotations

import numpy as np

FIELDS = ("ids", "target", "done", "gen", "out", "cache", "blocks", "shared")


class Running:
    def __init__(self) -> None:
        for name in FIELDS:
            setattr(self, name, np.zeros(0, dtype=np.int64))

    def __len__(self) -> int:
        return int(self.ids.size)

    def extend(self, rows: list[tuple[int, ...]]) -> None:
        """Append sequences, each ``(id, target, done, gen, out, cache, blocks, shared)``."""
        if not rows:
            return
        columns = np.asarray(rows, dtype=np.int64).T
        for name, column in zip(FIELDS, columns, strict=True):
            setattr(self, name, np.concatenate([getattr(self, name), column]))

    def keep(self, mask: np.ndarray) -> None:
        """Drop every sequence where ``mask`` is False."""
        for name in FIELDS:
            setattr(self, name, getattr(self, name)[mask])

    def decoding(self) -> np.ndarray:
        """Mask of sequences whose prompt (or recompute) is fully in the cache."""
        return self.done >= self.target
