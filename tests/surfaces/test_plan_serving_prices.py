"""plan-serving's ``--price GPU=USD`` (issue 35): one price per GPU. A second price for the same
GPU, under its preset key or its full name, was kept silently (the last won); now it is one line
naming the GPU and both prices."""

from __future__ import annotations

import pytest

from commatlas.cli import main
from commatlas.plan_serving_command import _prices

PLAN = ["plan-serving", "--model", "llama-3.1-8b", "--gpus", "h100", "--tp", "1",
        "--precision", "fp8", "--prompt-len", "128", "--output-len", "16", "--requests", "50",
        "--slo-ttft-p90", "2 s", "--slo-tpot-p99", "50 ms"]  # fmt: skip


@pytest.mark.parametrize("items", [["h100=2", "h100=3"], ["h100=2", "H100 SXM=3"]])
def test_a_gpu_priced_twice_is_refused(items: list[str]) -> None:
    with pytest.raises(ValueError, match=r"--price: the H100 SXM is priced twice \(2 and 3\)"):
        _prices(items)


def test_the_command_says_it_in_one_line(capsys) -> None:  # noqa: ANN001
    assert main([*PLAN, "--price", "h100=2", "h100=2.5"]) == 2
    err = capsys.readouterr().err
    assert "priced twice" in err and len(err.strip().splitlines()) == 1


def test_distinct_gpus_keep_their_prices() -> None:
    assert _prices(["h100=2", "h200=3"]) == {"H100 SXM": 2.0, "H200 SXM": 3.0}
