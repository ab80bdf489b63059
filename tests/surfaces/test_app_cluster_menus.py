"""The cluster preset menu on the Serving and Goodput pages fills what ``--cluster`` fills on
predict-serving / predict-goodput: the GPU (both), GPUs per node and the peer bandwidth per node
(goodput: the preset's NICs x their achieved rate). Each page's numbers after the choice are
compared with the command's JSON for the same preset, not with a number written here."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
from app_helpers import app_test

from commatlas.cli import main
from costmodels.formatting import format_number
from costmodels.hardware.clusters import get_cluster
from costmodels.units import parse_bandwidth

PAGES = Path(__file__).parents[2] / "app_pages"
goodput_page = partial(app_test, str(PAGES / "goodput.py"), timeout_s=60)
serving_page = partial(app_test, str(PAGES / "serving.py"), timeout_s=60)
#: the Goodput page's default layout and ZeRO stage, as flags
GOODPUT = ["predict-goodput", "--model", "llama-3.1-405b", "--tp", "8", "--pp", "9", "--dp",
           "224", "--zero", "1", "--json"]  # fmt: skip


def _cli(capsys, *argv: str) -> dict:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def _rows(at) -> dict:
    main_rows, more = at.dataframe[0].value, at.dataframe[1].value
    return main_rows.merge(more, on="mode").set_index("mode").to_dict("index")


@pytest.mark.parametrize("name", ["gcp-a3-high", "oci-h100-roce", "gb200-nvl72"])
def test_goodput_menu_fills_gpu_node_and_peer_bandwidth_as_the_command(capsys, name) -> None:
    at = goodput_page()
    at.selectbox(key="gp_cluster").set_value(name).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    preset, state = get_cluster(name), at.session_state
    assert state["gp_gpu"] == preset.gpu and state["gp_gpn"] == preset.gpus_per_node
    assert at.query_params["gp_cluster"] == name
    cli = _cli(capsys, *GOODPUT, "--cluster", name)
    peer = parse_bandwidth(state["gp_peer_bw"], "peer")
    assert peer == pytest.approx(cli["bandwidths"]["peer_Bps"], rel=1e-5)  # 6 digits shown
    memory = _rows(at)["in-memory"]  # the peer copy is the in-memory mode's background write
    expected = cli["modes"]["in-memory"]["checkpoint_persist_s"]
    assert memory["then in the background (s)"] == pytest.approx(expected, rel=1e-5)


def test_goodput_fields_edited_after_the_preset_override_it() -> None:
    at = goodput_page()
    at.selectbox(key="gp_cluster").set_value("aws-p5").run()
    at.text_input(key="gp_peer_bw").set_value("100 GB/s").run()
    at.selectbox(key="gp_gpu").set_value("H200 SXM").run()
    assert not at.error, [e.value for e in at.error]
    state = at.session_state
    assert state["gp_peer_bw"] == "100 GB/s" and state["gp_gpu"] == "H200 SXM"
    assert state["gp_cluster"] == "aws-p5" and state["gp_gpn"] == 8


def test_serving_menu_fills_the_gpu_and_matches_the_command(capsys) -> None:
    at = serving_page()
    at.selectbox(key="sv_cluster").set_value("aws-p5e").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.session_state["sv_gpu"] == get_cluster("aws-p5e").gpu == "H200 SXM"
    assert "8 x H200 SXM per instance" in at.caption[0].value
    assert "fills the GPU" in at.selectbox(key="sv_cluster").help
    cli = _cli(capsys, "predict-serving", "--cluster", "aws-p5e", "--model", "llama-3.1-70b",
               "--tp", "8", "--batch", "16", "--prompt-len", "1024", "--output-len", "256",
               "--json")  # fmt: skip
    assert cli["gpu"]["name"] == "H200 SXM"
    metrics = {m.label: m.value for m in at.metric}  # as the page writes them
    assert metrics["Time per output token"] == f"{format_number(cli['tpot_s'] * 1e3)} ms"
    assert metrics["Time to first token"] == f"{format_number(cli['ttft_s'] * 1e3)} ms"


def test_serving_gpu_edited_after_the_preset_overrides_it() -> None:
    at = serving_page()
    at.selectbox(key="sv_cluster").set_value("gcp-a3-ultra").run()
    at.selectbox(key="sv_gpu").set_value("B200").run()
    assert not at.error, [e.value for e in at.error]
    assert at.session_state["sv_gpu"] == "B200" and "x B200 per instance" in at.caption[0].value
