"""Step times on a uniform lattice: sums of many steps by FFT, and exact order statistics.

Local SGD waits for the slowest *sum* of H steps and SSP's lanes are random walks of steps, so
the straggler models need the distribution of a sum of u i.i.d. step times. For the normal that
is exact (a normal); for the log-normal, the shifted exponential and an empirical list it is
computed here: the step time is put on a lattice of spacing h (each fine cell's mass split
between its two neighbouring lattice points in proportion to distance, which keeps the mean
exact and adds at most h^2 / 4 to the variance), and the u-fold convolution is one FFT raised
to the power u. Everything after that (cdf, survival, the expected order statistics of
:mod:`costmodels.stragglers.order_statistics`) is exact for the lattice distribution.

Cost: O(L log L) for a sum of L = u x (points of one step) lattice points, capped by
``MAX_POINTS`` (the spacing grows instead).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from costmodels.stragglers.order_statistics import discrete_wait

MAX_POINTS = 2**21  # lattice points of one sum: 16 MB of float64, an FFT of ~0.1 s
FINE = 4  # sub-cells per lattice cell when a continuous distribution is put on the lattice


@dataclass(frozen=True)
class Lattice:
    """A distribution with ``pmf[j]`` at ``origin + j * spacing`` (seconds)."""

    origin: float
    spacing: float
    pmf: np.ndarray

    @property
    def values(self) -> np.ndarray:
        return self.origin + self.spacing * np.arange(len(self.pmf))

    @property
    def mean(self) -> float:
        return float(np.dot(self.values, self.pmf))

    @property
    def std(self) -> float:
        centred = self.values - self.mean
        return float(np.sqrt(max(np.dot(centred * centred, self.pmf), 0.0)))

    def expected_wait(self, workers: int, backups: int = 0) -> float:
        """E[time until all but ``backups`` of ``workers`` draws have finished], exact."""
        return discrete_wait(self.values, self.pmf, workers, backups)

    def power(self, steps: int) -> Lattice:
        """The distribution of the sum of ``steps`` independent draws (FFT convolution)."""
        if steps == 1:
            return self
        length = steps * (len(self.pmf) - 1) + 1
        size = 1 << (length - 1).bit_length()
        spectrum = np.fft.rfft(self.pmf, size) ** steps
        pmf = np.fft.irfft(spectrum, size)[:length]
        return trimmed(steps * self.origin, self.spacing, pmf)


def trimmed(origin: float, spacing: float, pmf: np.ndarray, tail: float = 1e-18) -> Lattice:
    """A lattice without the FFT's round-off noise (negative or < ``tail`` mass at the ends),
    renormalised to total mass 1."""
    pmf = np.where(pmf > 0, pmf, 0.0)
    cumulative = np.cumsum(pmf)
    total = cumulative[-1]
    first = int(np.searchsorted(cumulative, tail * total))
    last = int(np.searchsorted(cumulative, total * (1 - tail)))
    last = min(max(last + 1, first + 1), len(pmf))
    kept = pmf[first:last]
    return Lattice(origin + first * spacing, spacing, kept / kept.sum())


def split_onto(points: np.ndarray, masses: np.ndarray, origin: float, spacing: float) -> Lattice:
    """Masses at arbitrary ``points`` split linearly between neighbouring lattice points
    (the mean is kept exactly)."""
    position = (points - origin) / spacing
    low = np.floor(position).astype(np.int64)
    upper_share = position - low
    size = int(low.max()) + 2
    pmf = np.zeros(size)
    np.add.at(pmf, low, masses * (1.0 - upper_share))
    np.add.at(pmf, low + 1, masses * upper_share)
    return trimmed(origin, spacing, pmf, tail=0.0)


def from_cdf(survival_at: object, low: float, high: float, spacing: float) -> Lattice:
    """Put a continuous distribution, given by its survival function, on a lattice over
    [low, high] (the mass outside is dropped: callers choose a range leaving < 1e-15)."""
    cells = max(int(np.ceil((high - low) / spacing)), 1)
    edges = low + (spacing / FINE) * np.arange(cells * FINE + 1)
    tails = survival_at(edges)  # type: ignore[operator]
    masses = np.maximum(tails[:-1] - tails[1:], 0.0)
    centres = 0.5 * (edges[:-1] + edges[1:])
    return split_onto(centres, masses / masses.sum(), low, spacing)


def spacing_for(std: float, support: float, steps: int) -> float:
    """Lattice spacing: 1/16 of a step's standard deviation, coarser when the sum of ``steps``
    steps over ``support`` seconds would need more than MAX_POINTS points."""
    return max(std / 16.0, steps * support / (MAX_POINTS - 1))
