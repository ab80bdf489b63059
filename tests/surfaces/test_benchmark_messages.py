"""What the benchmark scripts print says what their numbers mean (issue 42, item 14)."""

from __future__ import annotations

from benchmarks.evaluate_methods import ratio_line


def test_a_ratio_below_one_says_the_vectorised_path_lost() -> None:
    assert "LOST" in ratio_line(0.8, 1.0) and "1.2x faster" in ratio_line(0.8, 1.0)
    assert "vectorised path is 3.0x faster" in ratio_line(3.0, 1.0)
    assert "about even" in ratio_line(1.0, 1.0)
