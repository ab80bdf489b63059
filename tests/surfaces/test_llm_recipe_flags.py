"""Recipe flags that would change nothing are one-line errors naming the flag, as ``--dp-shard``
without ``--zero 3`` already was (issue 35): ``--power-cap`` above the TDP, ``--fp8-recipe``
without fp8, ``--async-tp`` with ``--tp 1``, ``--prefetch`` without ZeRO-3. With what they need,
each is accepted."""

from __future__ import annotations

import pytest

from commatlas.cli import main

SHAPE = ["--layers", "32", "--hidden", "4096", "--heads", "32", "--seq-len", "2048", "--vocab",
         "32000", "--global-batch", "64", "--gpu", "h100", "--gpus-per-node", "8"]  # fmt: skip
PREDICT = ["predict-llm", *SHAPE, "--pp", "1", "--dp", "8"]
PLAN = ["plan-llm", *SHAPE, "--gpus", "8", "--top", "1"]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        ([*PREDICT, "--tp", "1", "--power-cap", "1e9"],
         "--power-cap 1e+09 W is above the H100 SXM's 700 W TDP"),
        ([*PREDICT, "--tp", "1", "--fp8-recipe", "rowwise"],
         "--fp8-recipe rowwise scales fp8 GEMMs: needs --precision fp8 (got bf16)"),
        ([*PREDICT, "--tp", "1", "--async-tp"], "--async-tp overlaps the TP collectives"),
        ([*PREDICT, "--tp", "1", "--prefetch", "2"], "--prefetch all-gathers ZeRO-3/FSDP weights "
         "ahead: needs --zero 3 (got --zero 0)"),
        ([*PLAN, "--zero-stages", "0,1", "--prefetch", "2"], "needs 3 in --zero-stages"),
        ([*PLAN, "--fp8-recipe", "delayed"], "--fp8-recipe delayed scales fp8 GEMMs"),
    ],
)  # fmt: skip
def test_an_ineffective_recipe_flag_is_one_line(capsys, argv, words) -> None:  # noqa: ANN001
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(
    "argv",
    [
        [*PREDICT, "--tp", "1", "--power-cap", "700"],
        [*PREDICT, "--tp", "1", "--precision", "fp8", "--fp8-recipe", "rowwise"],
        [*PREDICT, "--tp", "2", "--dp", "4", "--async-tp"],
        [*PREDICT, "--tp", "1", "--zero", "3", "--prefetch", "2"],
    ],
)  # fmt: skip
def test_with_what_it_needs_the_flag_is_accepted(capsys, argv) -> None:  # noqa: ANN001
    assert main([*argv, "--json"]) == 0, capsys.readouterr().err
