"""--cluster on every command that takes a network, `commatlas clusters`, one meaning of --inter
in every help text, and the calculator's cluster preset menu."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
from app_helpers import app_test

from commatlas.cli import build_parser, main
from commatlas.network_flags import INTER_HELP

LLM = ["--model", "llama-2-7b", "--global-batch", "64", "--tp", "8", "--pp", "1", "--dp", "2"]


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_clusters_lists_every_preset_with_its_sources(capsys) -> None:
    code, out, _ = _run(capsys, "clusters")
    assert code == 0 and "aws-p5" in out and "gb200-nvl72" in out and "efa" in out
    code, out, _ = _run(capsys, "clusters", "--json")
    rows = json.loads(out)
    assert code == 0 and len(rows) >= 17 and all(row["sources"] for row in rows)
    code, out, _ = _run(capsys, "clusters", "gcp-a3-mega")
    assert code == 0 and "1,600 Gbps" in out and "tcpxo" in out
    code, _, err = _run(capsys, "clusters", "gcp-a9")
    assert code == 2 and "unknown cluster" in err and len(err.strip().splitlines()) == 1


def test_collective_with_only_a_preset_and_overrides(capsys) -> None:
    code, out, err = _run(capsys, "collective", "all-gather", "--cluster", "aws-p5", "--gpus",
                          "64", "--sizes", "256MiB", "--json")  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert data["nodes"] == 8 and data["gpus_per_node"] == 8
    text = " ".join(data["assumptions"])
    assert "cluster preset aws-p5" in text and "aws-ofi-nccl" in text and "share" in text
    code, out, err = _run(capsys, "collective", "all-reduce", "--cluster", "aws-p5", "--gpus",
                          "16", "--gpu", "h200", "--transport", "ib", "--sizes", "1M",
                          "--json")  # fmt: skip
    text = " ".join(json.loads(out)["assumptions"])
    assert code == 0 and "InfiniBand" in text and "EFA" not in text.split("cluster preset")[0]
    code, _, err = _run(capsys, "collective", "all-reduce", "--cluster", "aws-p9", "--gpus", "8",
                        "--sizes", "1M")  # fmt: skip
    assert code == 2 and "--cluster" in err


def test_link_names_work_in_every_command(capsys) -> None:
    base = ["--workload", "resnet50", "--batch-size", "64", "--inter", "InfiniBand NDR"]
    assert _run(capsys, "predict", *base, "--nodes", "2", "--json")[0] == 0
    assert _run(capsys, "compare", *base, "--node-counts", "1", "2", "--json")[0] == 0
    code, out, err = _run(capsys, "predict-llm", *LLM, "--inter", "InfiniBand NDR", "--json")
    assert code == 0, err
    ndr = json.loads(out)["cluster"]["inter_bandwidth_Bps"]
    assert ndr == pytest.approx(400e9 / 8 * 0.9)  # one NDR NIC per GPU at its fraction
    code, out, err = _run(capsys, "predict-llm", *LLM, "--cluster", "aws-p5", "--json")
    assert code == 0, err
    cluster = json.loads(out)["cluster"]
    assert cluster["transport"] == "efa" and cluster["inter_bandwidth_Bps"] == pytest.approx(45e9)


@pytest.mark.parametrize("command", ["collective", "predict", "compare", "predict-llm",
                                     "plan-llm", "predict-serving", "predict-goodput"])  # fmt: skip
def test_one_meaning_of_inter_in_every_help(command: str) -> None:
    parser = build_parser(command)
    sub = next(a for a in parser._actions if hasattr(a, "choices") and a.choices)
    actions = {opt: act for act in sub.choices[command]._actions for opt in act.option_strings}
    assert actions["--inter"].help.startswith(INTER_HELP)
    assert {"--cluster", "--nics-per-node", "--transport", "--sharp"} <= set(actions)


PAGE = str(Path(__file__).parents[2] / "app_pages" / "collectives.py")
run_page = partial(app_test, PAGE, timeout_s=60)


def test_calculator_cluster_menu_fills_the_inputs() -> None:
    at = run_page()
    at.selectbox(key="cluster").set_value("aws-p5").run()
    assert not at.error, [e.value for e in at.error]
    state = at.session_state
    assert state["gpu"] == "H100 SXM" and state["transport"] == "efa" and state["nics"] == 8
    assert state["nic"] == "Custom bandwidth per NIC" and state["nic_bw"] == "45 GB/s"
    assert "AWS EFA" in at.caption[0].value


def test_ethernet_nics_defaulted_from_gpus_is_said_and_compare_prints_assumptions(
    capsys,
) -> None:
    """Issue 42, item 8: "8 nodes with 25 GbE" without --nics-per-node silently meant 8 NICs per
    node; compare's table printed no assumptions though the README promises them."""
    base = ["--workload", "resnet50", "--batch-size", "64", "--inter", "25 GbE"]
    code, out, err = _run(capsys, "compare", *base, "--node-counts", "1", "8")
    assert code == 0 and "warning: --nics-per-node not given" in err
    said = out.split("assumptions:\n", 1)[1]
    assert "node counts 1, 8 (the table's rows), each of 8 GPUs (h200)" in said
    assert "network per node: 8 NIC(s)" in said and "--nics-per-node not given" in said
    assert "compute step" in said and "NCCL's tuner" in said
    code, out, err = _run(capsys, "predict", *base, "--nodes", "8", "--json")
    assert code == 0 and "--nics-per-node not given" in " ".join(json.loads(out)["assumptions"])
    for quiet in (["--nics-per-node", "1"], ["--inter", "InfiniBand NDR"]):
        code, out, err = _run(capsys, "predict", *base, *quiet, "--nodes", "8")
        assert code == 0 and "warning" not in err and "NIC(s)" in out
