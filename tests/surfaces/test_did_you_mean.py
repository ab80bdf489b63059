"""Errors that point at the cause, and typos that get a suggestion (issue 30, item 6).

``plan-llm --gpus 60`` blamed memory when the split was impossible; ``show`` / ``formula`` /
``search`` suggested nothing or an unrelated name ("ring" -> terngrad); a model alias was taken
silently. Suggestions come from taxonomy.suggest (difflib over ids, names and aliases).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
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
    # 66 = 2 x 3 x 11: DP must divide the batch 512 (a power of two), TP the 32 heads, and the
    # PP left (33 or 66) is more than the 32 layers; stages need not be equal (issue 26), so 60
    # (PP 15) and 68 (PP 17) have layouts
    err = err_of(capsys, [*PLAN, "--gpus", "66"], 1)
    assert "no valid layout of 66 GPUs (the split, not memory)" in err
    assert "--global-batch 512 must be a multiple of DP x micro-batch" in err
    assert "DP = 66 / (TP x PP x CP) can only be 3, 6, 11, 22, 33, 66" in err
    assert "64 or 68 GPUs have valid layouts" in err
    # the suggested counts, held by the planner's own enumeration
    shape = TransformerShape(32, 4096, 32, 2048)
    cluster = LLMCluster(get_gpu("a100-80gb"), 8, 240e9, 25e9)
    for gpus, valid in ((66, False), (64, True), (68, True), (60, True), (67, False)):
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


def test_a_mistyped_flag_gets_the_flag_meant(capsys) -> None:
    """Issue 42, item 9: ``predict --compressor`` printed the top-level usage with no hint; now
    every unknown flag is named with the close ones, even when a required flag is missing too."""
    with pytest.raises(SystemExit) as exit_:
        main(["predict", "--compressor", "topk", "--wrkload=resnet50"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "commatlas predict: error: unrecognized arguments" in err
    assert "--compressor (did you mean --compression?)" in err
    assert "--wrkload (did you mean --workload?)" in err and "required" not in err
    with pytest.raises(SystemExit):
        main(["docs", "build", "--site-dri", "x"])  # a nested action's flags count too
    assert "did you mean --site-dir?" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:  # a unique prefix is argparse's, not a typo
        main(["show", "ring-allreduce", "--hel"])
    assert exit_.value.code == 0
