"""The command line and the calculator give the same answer to the same question (issue 30).

Items 1, 2 and 4: ``predict`` without ``--intra`` prices the ``--gpu``'s own fabric, as
``collective``, ``predict-llm`` and the calculator do; the Compare page's intra-node link follows
the chosen GPU (by default); the default network and the planner's search are one definition
(costmodels.hardware.defaults, costmodels.llm.planner) read by both surfaces. Expected link
figures are NCCL's per-GPU NVLink counts written out here (links x per-link rate, NCCL's
src/graph/topo.h), not read from the code under test.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
from app_helpers import app_test, assert_message

from commatlas.cli import build_parser, main

ROOT = Path(__file__).parents[2]
compare_page = partial(app_test, str(ROOT / "app_pages" / "compare.py"))
llm_page = partial(app_test, str(ROOT / "app_pages" / "llm_planner.py"))
H100_NVLINK = 18 * 20.6e9  # NVLink 4: 18 links x 20.6 GB/s per GPU and direction
V100_NVLINK = 6 * 20e9  # DGX-1 hybrid cube-mesh: 6 NVLink 2 links x 20 GB/s


def predict_json(capsys, *flags: str) -> dict:
    argv = ["predict", "--workload", "resnet50", "--batch-size", "32", "--json", *flags]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_predict_without_intra_prices_the_gpus_own_fabric(capsys) -> None:
    base = ["--nodes", "1", "--gpus-per-node", "8", "--gpu", "h100", "--schedule", "bsp"]
    default = predict_json(capsys, *base)
    given = predict_json(capsys, *base, "--intra", f"{H100_NVLINK / 1e9:g} GB/s",
                         "--intra-latency", "2 us")  # fmt: skip
    assert default["communication_s"] == pytest.approx(given["communication_s"], rel=1e-12)
    said = " ".join(default["assumptions"])
    assert "intra-node 370.8 GB/s per GPU" in said and "no --intra" in said
    slow = predict_json(capsys, *base, "--intra", "100 GB/s")  # the old fixed default
    assert slow["communication_s"] > 2 * default["communication_s"]


@pytest.mark.parametrize(
    ("page_gpu", "cli_gpu", "nvlink"),
    [("H200 SXM", "h200", H100_NVLINK), ("V100 SXM2", "v100", V100_NVLINK)],
)
def test_compare_page_defaults_equal_predicts(capsys, page_gpu, cli_gpu, nvlink) -> None:
    at = compare_page(nodes="2", gpus="8", gpu=page_gpu)
    main_table = at.dataframe[0].value.set_index("method")
    cli = predict_json(capsys, "--nodes", "2", "--gpu", cli_gpu, "--schedule", "wfbp")
    assert main_table.loc["wfbp/nccl", "iteration (ms)"] == pytest.approx(
        1e3 * cli["iteration_time_s"], rel=1e-9
    )
    assert f"{nvlink / 1e9:.4g} GB/s per GPU" in at.caption[0].value


def test_compare_pages_intra_link_follows_a_gpu_change() -> None:
    at = compare_page(nodes="1", gpus="8")
    assert "370.8 GB/s per GPU" in at.caption[0].value
    at.sidebar.selectbox(key="gpu").set_value("V100 SXM2").run()
    assert not at.exception
    assert "V100 SXM2: NVLink 2 hybrid cube-mesh" in at.caption[0].value
    assert "370.8" not in at.caption[0].value


def test_following_the_gpu_without_a_gpu_preset_says_what_to_choose() -> None:
    at = compare_page(gpu="Other GPU (links only)")
    assert_message(at, "error", "needs a GPU preset; choose one, or a link preset")


def test_llm_page_searches_and_prices_as_plan_llm_does() -> None:
    from app_pages.llm_inputs import FIELDS
    from costmodels.units import parse_bandwidth

    plan = build_parser("plan-llm").parse_args(
        ["plan-llm", "--model", "llama-2-7b", "--global-batch", "8", "--gpus", "8"]
    )
    from commatlas.llm_commands import _plan_choices
    from costmodels.hardware.defaults import LLM_INTER

    page = {field.key: field.default for field in FIELDS}
    searched = _plan_choices(plan)  # the default framework's (megatron) stages and modes
    assert plan.framework == "megatron" and page.get("fw", "megatron") == "megatron"
    assert tuple(page["mbs"]) == tuple(searched["micro_batches"])
    assert tuple(page["zero"]) == tuple(searched["zero_stages"])
    assert tuple(page["rc"]) == tuple(searched["recompute"])
    at = llm_page()
    inter = " ".join(c.value for c in at.caption)
    assert plan.inter is None  # the LLM commands' default network is the calculator's
    assert f"{parse_bandwidth(LLM_INTER) / 1e9:g} GB/s" in inter and "5 µs" in inter
