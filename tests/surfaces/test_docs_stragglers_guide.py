"""The stragglers guide: its tables recomputed by hand where a closed form exists, and every claim
of its prose checked against the numbers it is about.

By hand: the shifted exponential's BSP step 0.9 m + 0.1 m H_p (exponential spacings, exact
fractions for H_p); the measured list's BSP step sum_j x_(j) ((j/n)^p - ((j-1)/n)^p) (the
maximum of p draws from the list). Numbers read back from the page match their formatted form.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from commatlas.docs_site.guides import stragglers, stragglers_numbers
from costmodels.formatting import format_ms
from taxonomy import load_taxonomy


@pytest.fixture(scope="module")
def files() -> dict[str, str]:
    return stragglers.files(load_taxonomy())


@pytest.fixture(scope="module")
def text(files: dict[str, str]) -> str:
    return files["generated/guides/stragglers.md"]


def row(text: str, first: str) -> list[str]:
    line = next(x for x in text.splitlines() if x.startswith(f"| {first} |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_shifted_exponential_growth_is_the_harmonic_closed_form(text: str) -> None:
    mean, cv = stragglers_numbers.MEAN_S, stragglers_numbers.CV
    for p in stragglers_numbers.WORKER_COUNTS:
        harmonic = float(sum((Fraction(1, j) for j in range(1, p + 1)), Fraction(0)))
        seconds = mean * (1 - cv) + mean * cv * harmonic
        assert row(text, f"{p:,}")[3].startswith(f"{format_ms(seconds)} ("), p
    assert row(text, "1")[1:] == ["250 (+0 %)"] * 3  # one worker waits for nobody


def test_measured_list_bsp_is_the_maximum_of_draws_from_the_list(text: str) -> None:
    values = np.sort(stragglers_numbers.stalled_list().times)
    j = np.arange(1, len(values) + 1) / len(values)
    bsp = float(np.sum(values * (j**64 - (j - 1 / len(values)) ** 64)))
    stalled_table = text.split("## Measured step times with stalls")[1]
    assert row(stalled_table, "BSP")[1] == format_ms(bsp)


def test_prose_claims_hold(text: str) -> None:
    results = stragglers_numbers.stalled_results()
    measured, fitted = results["measured"], results["fitted"]
    assert measured["bsp"] > fitted["bsp"]  # "longer than the moment-matched log-normal"
    assert measured["backup-workers"] < 0.8 * measured["bsp"]  # backups absorb the stalls
    slow = stragglers_numbers.comparison(1024)
    ideal = stragglers_numbers.MEAN_S + stragglers_numbers.SYNC_S
    assert slow["ssp"] - ideal < 0.1 * (slow["bsp"] - ideal)  # "recovers almost all of it"
    assert slow["backup-workers"] > slow["local-sgd"] > slow["ssp"]
    for p in stragglers_numbers.EXAMPLE_WORKERS:
        shown = stragglers_numbers.comparison(p)
        assert (
            f"({shown['bsp'] / shown['ssp']:.2f}x)"
            in row(text, "SSP, s = 2")[1:][stragglers_numbers.EXAMPLE_WORKERS.index(p)]
        )


def test_guide_files_hold_the_chart(files: dict[str, str]) -> None:
    assert files["generated/guides/plots/stragglers-growth.svg"].lstrip().startswith("<svg")
