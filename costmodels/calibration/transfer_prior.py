"""How much of a measured step's error carries to other layouts: an empirical-Bayes shrinkage.

A measured step's log error y = log(measured / predicted) is the sum of two things: the model's
*bias* b on this model, cluster and software (it carries to every other layout) and the model's
*per-layout* error e on this one layout (it does not). Across the dev data (costmodels/data/
step-transfer-prior.json, written by ``benchmarks/step_transfer_prior.py``; the estimate is
costmodels/calibration/prior_estimate.py):

- e ~ N(0, sigma^2): sigma is the scatter of y within one model (a vTrain shape, a torchtitan
  model, ...) for the run's kernel set (``sigma_by_kernels``; the pooled value for a kernel set
  no dev group ran);
- b ~ (1 - pi) N(0, tau^2) + pi N(0, tau_wide^2): tau is the spread of the model's bias between
  the dev models and clusters (maximum likelihood on the groups' mean errors). The dev data
  were fitted on, so they cannot show how far off a cluster *unlike* all of them can be: a
  wide component (``PI_WIDE`` = 0.05 of the prior mass, ``TAU_WIDE`` = ln 2, a factor of two
  either way; ESTIMATES, stated, not fitted) keeps a step the model misses by far from being
  taken for layout noise. Where the measured run rests on a mechanism no dev row validates
  (costmodels.llm.error_bands ``unvalidated_mechanisms``) the narrow component does not
  apply and the prior is the wide one alone.

With n steps on distinct kernel sets the mean error has noise sigma^2 / n. The posterior mean
of b is a weight W times y: W = sum_k p_k tau_k^2 / (tau_k^2 + sigma^2 / n), p_k the posterior
probability of component k (its prior weight times the normal density of y with variance
tau_k^2 + sigma^2 / n). Small errors are shrunk towards the model (W ~ tau^2 / (tau^2 +
sigma^2)); errors far beyond the dev spread are taken almost whole (W ~ 1). This replaces the
earlier keep-or-fit gate (keep the model within 2.5 sigma, fit the whole error beyond), which
corrected a consistent bias of a few sigma not at all and a layout the model happens to miss
by 2.5 sigma entirely.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "step-transfer-prior.json"
PI_WIDE = 0.05  # ESTIMATE: prior share of clusters unlike every dev cluster (module docstring)
TAU_WIDE = math.log(2.0)  # ESTIMATE: their log-bias scale, a factor of two


@dataclass(frozen=True)
class TransferPrior:
    """The shrinkage's constants (module docstring); natural-log units."""

    tau: float
    sigma_by_kernels: dict[str, float]
    sigma_pooled: float
    pi_wide: float = PI_WIDE
    tau_wide: float = TAU_WIDE

    def sigma(self, framework: str) -> float:
        """Per-layout scatter of the model for ``framework``'s kernel set."""
        return self.sigma_by_kernels.get(framework, self.sigma_pooled)

    def weight(self, y: float, sigma: float, n: int = 1, validated: bool = True) -> float:
        """W: the share of the mean log error ``y`` of ``n`` distinct steps that carries."""
        noise = sigma * sigma / max(1, n)
        parts = [(self.pi_wide, self.tau_wide)]
        if validated:
            parts.append((1.0 - self.pi_wide, self.tau))
        weights, shrink = [], []
        for prior, tau in parts:
            var = tau * tau + noise
            weights.append(math.log(prior) - 0.5 * math.log(var) - 0.5 * y * y / var)
            shrink.append(tau * tau / var)
        top = max(weights)
        probs = [math.exp(w - top) for w in weights]
        return sum(p * s for p, s in zip(probs, shrink, strict=True)) / sum(probs)


@cache
def load_prior(path: Path = DATA) -> TransferPrior:
    """The shipped prior (costmodels/data/step-transfer-prior.json)."""
    record = json.loads(path.read_text())
    return TransferPrior(
        tau=float(record["tau"]),
        sigma_by_kernels={k: float(v) for k, v in record["sigma_by_kernels"].items()},
        sigma_pooled=float(record["sigma_pooled"]),
        pi_wide=float(record.get("pi_wide", PI_WIDE)),
        tau_wide=float(record.get("tau_wide", TAU_WIDE)),
    )
