"""Where a MoE layer's routed tokens go: how many NVLink domains and GPUs one token reaches, and how
much more the busiest expert-parallel rank receives than the mean (issue 39 item 5).

Spread (balanced routing: every expert equally likely; DeepSeek-V3's node-limited routing,
arXiv:2412.19437 Sec. 2.1.2, where given). An EP group of p ranks lies in N domains of g ranks
(costmodels/llm/group_span.py places it as Megatron-LM numbers its ranks); E experts, e = E/p
per rank, S = E/N per domain; a token picks k experts inside M = min(node limit, N) domains:

- domains reached D: with M < N the router first picks the M domains by their best experts,
  so each picked domain receives at least one of the token's experts: D = min(M, k) (a
  simulation of DeepEP's own test routing, 256 experts on 8 domains with M = 4, gives 3.98 of
  4); with M = N the k experts fall anywhere: D = N (1 - C(S(N-1), k) / C(SN, k));
- GPUs reached G (one copy per GPU, however many of its experts the token picked: DeepEP sends
  a token once per rank, tests/legacy/test_internode.py ``is_token_in_rank``):
  G = gM (1 - C(SM - e, k) / C(SM, k)), the k experts drawn uniformly among the SM experts of
  the chosen domains.

Imbalance. A balanced router still spreads a micro-batch's A = tokens x k routed copies by
chance: a rank's load is about binomial (A, 1/p), and the busiest of p ranks holds
1 + z_p sqrt((p-1)/A) times the mean, z_p the expected largest of p standard normals (computed
here by quadrature). This is a floor: it holds for a router that balances perfectly in
expectation. Routers trained with an auxiliary loss or DeepSeek's bias balancing sit above it
by an amount their papers report per model, not per run; a user who measured their own expert
loads states that factor instead (``TrainingRecipe.moe_imbalance``).

The domains themselves: costmodels/llm/group_span.job_domain.
"""

from __future__ import annotations

import functools
import math

import numpy as np


def domains_reached(experts: int, ranks: int, per_domain: int, top_k: int,
                    node_limit: int = 0) -> float:  # fmt: skip
    """Expected NVLink domains one token's experts lie in (D, module docstring)."""
    domains = max(1, ranks // max(1, per_domain))
    limit = min(node_limit or domains, domains)
    k = min(top_k, experts)
    if limit < domains:
        return float(min(limit, k))
    s = experts // domains
    return domains * (1 - math.comb(s * (domains - 1), k) / math.comb(s * domains, k))


def gpus_reached(experts: int, ranks: int, per_domain: int, top_k: int,
                 node_limit: int = 0) -> float:  # fmt: skip
    """Expected distinct GPUs of the EP group one token is sent to (G, module docstring)."""
    per_domain = max(1, min(per_domain, ranks))
    domains = max(1, ranks // per_domain)
    limit = min(node_limit or domains, domains)
    pool = experts * limit // domains  # experts of the chosen domains
    local = max(1, experts // ranks)
    k = min(top_k, pool)
    return per_domain * limit * (1 - math.comb(pool - local, k) / math.comb(pool, k))


@functools.lru_cache(maxsize=256)
def expected_max_normal(n: int) -> float:
    """E[max of n independent standard normals] by quadrature (0 for n = 1)."""
    if n <= 1:
        return 0.0
    x = np.linspace(-8.0, 9.0, 4001)
    pdf = np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    cdf = 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    density = n * pdf * cdf ** (n - 1)
    return float(np.sum(x * density) * (x[1] - x[0]))


def busiest_rank_factor(routed: float, ranks: int) -> float:
    """Busiest EP rank's routed tokens over the mean, for ``routed`` copies (tokens x top_k) of
    one micro-batch over ``ranks`` ranks under a balanced router (the floor, module docstring)."""
    if ranks <= 1 or routed <= 0:
        return 1.0
    return 1.0 + expected_max_normal(ranks) * math.sqrt((ranks - 1) / routed)


def imbalance_note(factor: float, stated: bool) -> str:
    """One line for the prediction's assumptions."""
    if stated:
        return (f"expert load: the busiest EP rank holds {factor:.3g}x the mean routed tokens "
                "(--moe-imbalance, as stated)")  # fmt: skip
    return (f"expert load: the busiest EP rank holds {factor:.3g}x the mean routed tokens, the "
            "chance spread of a perfectly balanced router (a floor; state a measured max/mean "
            "with --moe-imbalance)")  # fmt: skip
