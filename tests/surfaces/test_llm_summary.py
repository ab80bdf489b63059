"""``predict-llm`` without ``--json`` prints a short summary built from the JSON result (issue 30).

Item 5: the text output was an 80-line flattened dump and a layout that did not fit said
"fits False" on line 4. The summary says "DOES NOT FIT" first, then time, tokens/s, MFU, memory
against capacity and where the time goes; it is built from the JSON generically, so fields the
step model adds (a memory breakdown, an error band, usable memory) show up and unknown ones do
not break it. The exit code stays 0 for a layout that does not fit: the prediction is the
answer, and ``--json``'s ``fits`` says the same for scripts.
"""

from __future__ import annotations

import json
import re

from commatlas.cli import main
from commatlas.llm_summary import summary_lines
from costmodels.formatting import format_seconds

LLAMA = ["--model", "llama-2-7b", "--global-batch", "64", "--tp", "8", "--pp", "1", "--dp", "1"]
TOO_BIG = ["--model", "llama-3.1-70b", "--global-batch", "64", "--tp", "1", "--pp", "1",
           "--dp", "8"]  # fmt: skip


def run(capsys, argv: list[str]) -> tuple[str, dict]:
    assert main(["predict-llm", *argv]) == 0
    text = capsys.readouterr().out
    assert main(["predict-llm", *argv, "--json"]) == 0
    return text, json.loads(capsys.readouterr().out)


def test_summary_is_short_readable_and_holds_the_numbers(capsys) -> None:
    text, out = run(capsys, LLAMA)
    lines = text.strip().splitlines()
    assert len(lines) <= 25
    assert lines[0].startswith("preset Llama 2 7B on 8 x A100 80GB SXM")
    assert not re.search(r"\de[+-]\d", text)  # no 3.34421e+10
    assert "source" not in text and "datasheet" not in text  # the GPU's source stays in --json
    assert f"step time    {format_seconds(out['iteration_time_s'])}" in text
    assert f"MFU          {out['mfu_pct']:.1f} %" in text
    assert "tokens/s per GPU" in text and ": fits (" in text and "--json" in lines[-1]
    start = next(i for i, line in enumerate(lines) if line.startswith("where the"))
    parts = [line.split()[0] for line in lines[start + 1 :] if line.startswith("  ")]
    assert parts and parts[0] == "GEMMs"  # the largest part first


def test_a_layout_that_does_not_fit_says_so_first(capsys) -> None:
    text, out = run(capsys, TOO_BIG)
    assert out["fits"] is False
    first = text.splitlines()[0]
    assert first.startswith("DOES NOT FIT: this layout needs ")
    assert "GiB usable of the 80 GiB" in first and "too much" in first


def test_fields_the_step_model_adds_are_shown_generically(capsys) -> None:
    _, out = run(capsys, LLAMA)
    gib = 2**30
    extra = {**out, "memory_breakdown_bytes": {"weights": 2 * gib, "activations": 5 * gib,
                                               "optimizer_states": 0.5 * gib},
             "usable_memory_bytes": 75 * gib, "expected_error_pct": 12.0,
             "something_new": {"a": 1}}  # fmt: skip
    text = "\n".join(summary_lines(extra))
    assert "(expected error about ±12 %)" in text
    assert "75.0 GiB usable of the 80 GiB" in text
    order = [word for word in ("activations", "weights", "optimizer states") if word in text]
    assert order == ["activations", "weights", "optimizer states"]
    assert text.index("activations") < text.index("weights") < text.index("optimizer states")
    bare = {"iteration_time_s": 1.0, "fits": True}  # the least a result can hold
    assert summary_lines(bare)[-1].endswith("--json")
