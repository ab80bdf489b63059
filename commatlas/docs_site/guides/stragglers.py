"""The stragglers guide (``generated/guides/stragglers.md``): what waiting for the slowest worker
costs and what SSP, local SGD and backup workers buy; numbers from
:mod:`commatlas.docs_site.guides.stragglers_numbers`."""

from __future__ import annotations

from commatlas.docs_site import Files
from commatlas.docs_site.guides import _common as c
from commatlas.docs_site.guides import stragglers_numbers as g
from taxonomy import Taxonomy

SLUG = "stragglers"


def _model(link) -> list[str]:  # noqa: ANN001 (the record-link helper of page_text)
    return [
        "## The model",
        "",
        "Each worker's compute time per step is a random variable X, independent across "
        "workers and steps: normal, log-normal or shifted exponential with a given mean and "
        "coefficient of variation cv (standard deviation / mean), or drawn from a list of "
        "measured step times. A synchronisation (all-reduce or push/pull) of fixed time follows "
        "and is not overlapped with compute.",
        "",
        f"- {link('bsp-ssgd')}: every step waits for the slowest of p workers, "
        "E[max(X_1, ..., X_p)]. For a shifted exponential X = t_0 + Exp(θ) this is exactly "
        "t_0 + θ H_p with H_p = 1 + 1/2 + ... + 1/p ≈ ln p + 0.577; for the normal it grows "
        "like σ √(2 ln p); CommAtlas integrates the distribution of the maximum numerically "
        "(not by sampling) and sums it exactly for a measured list.",
        f"- {link('sync-backup-workers')}: p + k workers run each step and the first p "
        "gradients make it, so a step lasts as long as the p-th fastest of p + k: "
        "t_0 + θ (H_{p+k} − H_k) for the shifted exponential. The k extra machines are the price.",
        f"- {link('local-sgd')} with period H: workers run H steps alone, then average; a step "
        "costs E[max over workers of the sum of H steps] / H plus 1/H of a synchronisation. "
        "Summing H steps shrinks their relative spread by √H.",
        f"- {link('ssp')} with staleness s: a worker may start clock c once every worker has "
        "finished clock c − s − 1. A barrier every s + 1 clocks is one schedule this allows, "
        "so SSP is never slower than local SGD with H = s + 1; its exact rate has no closed "
        "form. CommAtlas derives it in a mean-field approximation: each worker's lead over the "
        "barrier follows Lindley's recursion R' = max(R, 0) + X − γ, and the barrier's rate γ "
        "solves s γ = E[max of p copies of R] (the derivation is in "
        "`costmodels/stragglers/ssp.py`). In the limit of small drift this gives the closed "
        "form γ ≈ (μ + √(μ² + 2σ² H_p / s)) / 2.",
        "",
        "A seeded simulation holds every formula within 2 % at p = 8, 64 and 1,024 "
        "(`tests/costmodels/test_stragglers_monte_carlo.py`: normal, log-normal, shifted "
        "exponential and a measured list; cv up to 0.5, and 0.3 for SSP). Beyond cv 0.3 the SSP "
        "estimate drifts: for cv near 1 it reads up to about 4 % fast at large p and up to 7 % "
        "slow for a log-normal at p = 8, s = 1.",
        "",
    ]


def page_text(tax: Taxonomy) -> str:
    link = lambda rid: c.record_link(tax, rid)  # noqa: E731
    fast, slow = g.comparison(g.EXAMPLE_WORKERS[0]), g.comparison(g.EXAMPLE_WORKERS[1])
    stalled = g.stalled_results()
    measured = g.stalled_list()
    lines = [
        "# Stragglers: BSP, SSP, local SGD or backup workers?",
        "",
        "**The question.** Your workers' step times vary from step to step (data loading, "
        "garbage collection, thermal throttling, other jobs on the node). Synchronous training "
        "waits for the slowest worker every step, so the more workers, the longer each step. "
        "How much does that cost at your scale, and which of bounded staleness (SSP), "
        "infrequent averaging (local SGD) and spare workers (backup workers) gets the time back?",
        "",
        *_model(link),
        "## How BSP's step grows with the number of workers",
        "",
        f"A {c.format_ms(g.MEAN_S)} ms mean step with cv {g.CV:g} (an illustrative value, not "
        "a measurement): BSP's compute per step in ms, and its overhead over the mean step. "
        "The shape of the tail decides the growth: the exponential tail's like ln p, the "
        "normal's like √(ln p), the log-normal's (over this range) in between.",
        "",
        *c.table(["workers p", "normal", "log-normal", "shifted exponential"], g.growth_rows()),
        "![BSP overhead against workers](plots/stragglers-growth.svg)",
        "",
        "## The four strategies",
        "",
        f"The same log-normal step and a {c.format_ms(g.SYNC_S)} ms synchronisation: ms per "
        f"iteration and the speed-up over BSP at {g.EXAMPLE_WORKERS[0]} and "
        f"{g.EXAMPLE_WORKERS[1]:,} workers.",
        "",
        *c.table(["strategy", *(f"p = {p:,}" for p in g.EXAMPLE_WORKERS)], g.comparison_rows()),
        f"At {g.EXAMPLE_WORKERS[1]:,} workers BSP spends "
        f"{c.format_percent(slow['bsp'] / (g.MEAN_S + g.SYNC_S) - 1)} more per step than if "
        f"every step took the mean. SSP with s = {g.STALENESS} recovers almost all of it "
        f"({c.format_ms(slow['ssp'])} ms); local SGD with H = {g.PERIOD} also syncs "
        f"{g.PERIOD} times less often ({c.format_ms(slow['local-sgd'])} ms); {g.BACKUPS} backup "
        f"workers cut only the extreme tail ({c.format_ms(slow['backup-workers'])} ms at "
        f"{g.EXAMPLE_WORKERS[1]:,}, {c.format_ms(fast['backup-workers'])} ms at "
        f"{g.EXAMPLE_WORKERS[0]}). None of this counts what the strategies cost in accuracy "
        "per iteration: stale or local updates and dropped gradients may need more iterations.",
        "",
        "## Measured step times with stalls",
        "",
        f"A synthetic list of {len(measured.times):,} step times (95 % log-normal around "
        "100 ms with cv 0.05, 5 % stalled by 60 %) has mean "
        f"{c.format_ms(measured.mean)} ms and cv {measured.std / measured.mean:.3f}. At "
        "64 workers, the list itself against a log-normal with the same mean and cv:",
        "",
        *c.table(
            ["strategy", "measured list (ms)", "log-normal, same mean and cv (ms)"],
            g.stalled_rows(),
        ),  # fmt: skip
        f"With 64 workers almost every step contains a stalled worker, so BSP's step "
        f"({c.format_ms(stalled['measured']['bsp'])} ms) sits near the stall, longer than the "
        f"moment-matched log-normal suggests ({c.format_ms(stalled['fitted']['bsp'])} ms): "
        "when stalls are rare and large, give the measured times, not a mean and a cv. Backup "
        "workers help once they can absorb the few stalled workers of a step.",
        "",
        "## What is left out",
        "",
        "Correlated slowness (a machine that is slow every step hurts BSP every step and "
        "backup workers only when k covers it), slow links rather than slow compute, "
        "communication overlapped with compute, and the convergence cost of each strategy. "
        f"Try your own numbers in the [calculator's Stragglers page]({c.CALCULATOR}).",
        "",
        *c.reproduce(reproduce_lines()),
    ]
    return "\n".join(lines)


def reproduce_lines() -> list[str]:
    return [
        "- The four strategies at 1,024 workers: `commatlas predict-stragglers --workers 1024 "
        "--distribution lognormal --mean '250 ms' --cv 0.1 --staleness 2 --period 8 "
        "--backups 4 --sync '20 ms' --json`.",
        "- A measured list: `commatlas predict-stragglers --workers 64 --times steps.txt "
        "--staleness 2 --period 8 --backups 4` (one time per line with its unit, or a first "
        "line `unit: ms`; add `--distribution lognormal` to fit one by mean and cv).",
        "- In Python: `costmodels.stragglers.compare.compare_strategies`, the formulas in "
        "`costmodels.stragglers.strategies` and `.ssp`, the simulations in "
        "`costmodels.stragglers.simulate`; the closed forms as cost models: "
        "`commatlas formula bsp-ssgd`, `commatlas formula sync-backup-workers`.",
    ]


def files(tax: Taxonomy) -> Files:
    return {
        f"generated/guides/{SLUG}.md": page_text(tax),
        "generated/guides/plots/stragglers-growth.svg": g.growth_chart_svg(),
    }
