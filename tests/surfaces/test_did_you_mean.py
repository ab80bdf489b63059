"""Errors that point at the cause, and typos that get a suggestion (issue 30, item 6).

``plan-llm --gpus 60`` blamed memory when the split was impossible; ``show`` / ``formula`` /
``search`` suggested nothing or an unrelated name ("ring" -> terngrad); a model alias was taken
silently. Suggestions come from taxonomy.suggest (difflib over ids, names and aliases).
"""

from __future__ import annotations

import json
from pathlib import Path

from app_helpers import app_test, assert_message

from commatlas.cli import main
from costmodels.hardware import get_gpu
from costmodels.llm.planner import enumerate_layouts
from costmodels.llm.shapes import LLMCluster, TransformerShape

ROOT = Path(__file__).parents[2]
PLAN = ["plan-llm", "--layers", "32", "--hidden", "4096", "--heads", "32", "--seq-len", "2048",
        "--global-batch", "512", "--gpu", "a100-80gb"]  # fmt: skip


def err_of(capsys, argv: list[str], code: int) -> str:
    assert main(argv) == code
    return capsys.readouterr().err


def test_record_and_formula_typos_get_the_intended_name(capsys) -> None:
    err = err_of(capsys, ["show", "topk-sparsifcation"], 2)
    assert "did you mean topk-sparsification (Top-k sparsification)" in err
    err = err_of(capsys, ["formula", "ring"], 2)
    assert "did you mean ring-allreduce," in err and "terngrad" not in err
    assert "did you mean powersgd?" in err_of(capsys, ["formula", "powersdg"], 2)
    assert "no record matches; did you mean powersgd (PowerSGD)?" in (
        err_of(capsys, ["search", "powersdg"], 1)
    )


def test_knowledge_base_page_suggests_too() -> None:
    at = app_test(str(ROOT / "app_pages" / "knowledge_base.py"), q="powersdg")
    assert_message(at, "info", "Did you mean PowerSGD (powersgd)?")


def test_plan_llm_names_the_split_not_memory(capsys) -> None:
    err = err_of(capsys, [*PLAN, "--gpus", "60"], 1)
    assert "no valid layout of 60 GPUs (the split, not memory)" in err
    assert "--global-batch 512 must be a multiple of DP x micro-batch" in err
    assert "DP = 60 / (TP x PP x CP) can only be 15, 30, 60" in err
    assert "32 or 64 GPUs have valid layouts" in err
    # the suggested counts, held by the planner's own enumeration
    shape = TransformerShape(32, 4096, 32, 2048)
    cluster = LLMCluster(get_gpu("a100-80gb"), 8, 240e9, 25e9)
    for gpus, valid in ((60, False), (32, True), (64, True), (48, False)):
        assert any(True for _ in enumerate_layouts(shape, gpus, cluster, 512)) is valid, gpus


def test_plan_llm_says_when_memory_is_the_cause(capsys) -> None:
    argv = ["plan-llm", "--model", "llama-3.1-405b", "--seq-len", "2048", "--global-batch",
            "512", "--gpus", "8", "--zero-stages", "0,1"]  # fmt: skip
    err = err_of(capsys, argv, 1)
    assert "none of the" in err and "valid layouts of 8 GPUs fits in memory" in err
    assert "search ZeRO 3" in err


def test_a_model_alias_says_which_preset_it_priced(capsys) -> None:
    argv = ["predict-llm", "--model", "llama-3-70b", "--global-batch", "64", "--tp", "8",
            "--pp", "4", "--dp", "2", "--json"]  # fmt: skip
    assert main(argv) == 0
    model = json.loads(capsys.readouterr().out)["model"]
    assert model.startswith("preset Llama 3.1 70B (read from the alias 'llama-3-70b'")
    argv[2] = "llama-3.1-70b"  # the preset's own name, spelled loosely: no note
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["model"] == "preset Llama 3.1 70B"
