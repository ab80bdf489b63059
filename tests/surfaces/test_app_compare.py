"""The Compare page with Streamlit's AppTest: inputs (widgets and URL) -> the numbers shown.

Expected values for the hand-checkable cases are computed here from the alpha-beta formulas
(ring all-reduce 2(p-1) alpha + 2(p-1)/p n beta; BytePS-style parameter server), not through
costmodels, so a wrong binding, unit or formula fails. The named-workload case holds the page to
``costmodels.dp.predict.predict``, the engine of ``commatlas predict`` (the issue's contract).
Tolerance: rel 1e-9 for hand formulas (float rounding only); predict equality rel 1e-12.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pandas as pd
import pytest
from app_helpers import app_test, assert_message, chart_datasets, shown
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).parents[2]
PAGE = str(ROOT / "app_pages" / "compare.py")
CUSTOM_LINK = "Custom bandwidth / latency"
OTHER_GPU = "Other GPU (links only)"
# Readable headers of the ranking table (issue 17, item 4) and of its expander.
ITERATION, THROUGHPUT, EFFICIENCY = (
    "iteration (ms)",
    "throughput (samples/s)",
    "scaling efficiency (%)",
)
COMPUTE, EXPOSED = "compute (ms)", "exposed communication (ms)"


run_page = partial(app_test, PAGE)


def table(at: AppTest) -> pd.DataFrame:
    """The ranking table and its expander's columns, one row per method (exact values: the
    page formats only what it displays)."""
    main, more = (frame.value.set_index("method") for frame in at.dataframe[:2])
    return main.join(more)


def ring_s(p: int, n: float, alpha: float, bandwidth: float) -> float:
    return 2 * (p - 1) * alpha + 2 * (p - 1) / p * n / bandwidth if p > 1 else 0.0


# One custom tensor of 100M parameters (400 MB fp32), a measured 500 ms step, 2 nodes x 4 GPUs,
# NVLink-ish custom intra link and a 25 GB/s / 10 us inter link.
CUSTOM = dict(
    workload="Custom: parameter count",
    params="100M",
    gpu=OTHER_GPU,
    step="500 ms",
    batch="16",
    nodes="2",
    gpus="4",
    intra=CUSTOM_LINK,
    intra_bw="200 GB/s",
    intra_lat="2 us",
    inter=CUSTOM_LINK,
    inter_bw="25 GB/s",
    inter_lat="10 us",
    methods="bsp/ring,wfbp/ring,bsp/ps-separate",
)


def test_query_parameters_set_inputs_and_numbers_match_the_formulas() -> None:
    at = run_page(**CUSTOM)
    shown = table(at)
    n, step = 4e8, 0.5
    # 8 GPUs on 2 nodes: the flat ring runs at the inter-node link's speed.
    ring = ring_s(8, n, 10e-6, 25e9)
    assert shown.loc["bsp/ring", ITERATION] == pytest.approx(1e3 * (step + ring), rel=1e-9)
    # One tensor: WFBP sends the single message when backward ends, exactly like BSP.
    assert shown.loc["wfbp/ring", ITERATION] == pytest.approx(1e3 * (step + ring), rel=1e-9)
    assert shown.loc["bsp/ring", THROUGHPUT] == pytest.approx(16 * 8 / (step + ring))
    assert shown.loc["bsp/ring", EFFICIENCY] == pytest.approx(100 * step / (step + ring))
    # Parameter server, one server per node: each node's 4 GPUs reduce-scatter and all-gather
    # on the intra link (2 x ring half), and the node pushes and pulls n bytes to the servers
    # through its whole network: one 25 GB/s NIC per GPU (the default), 4 x 25 GB/s.
    local = 2 * (3 * 2e-6 + 3 / 4 * n / 200e9)
    ps = local + 2 * 10e-6 + 2 * n / (4 * 25e9)
    assert shown.loc["bsp/ps-separate", ITERATION] == pytest.approx(1e3 * (step + ps))
    assert shown.loc["bsp/ring", COMPUTE] == pytest.approx(500.0)
    assert shown.loc["bsp/ring", EXPOSED] == pytest.approx(1e3 * ring, rel=1e-9)
    assert list(at.dataframe[0].value["rank"]) == [1, 2, 3]
    assert list(at.dataframe[0].value.columns[:3]) == ["rank", "method", ITERATION]
    assert "8 GPUs (2 nodes x 4 GPUs)" in at.caption[0].value
    lines = chart_datasets(at)[0]["lines"]
    assert sorted(set(lines["p"])) == [1, 2, 3, 4, 8]
    one_gpu = lines[lines["p"] == 1]["iteration_ms"]
    assert list(one_gpu) == pytest.approx([500.0] * 3)  # nothing to exchange on one GPU
    # 4 GPUs of one node: the ring uses the intra link.
    four = lines[(lines["p"] == 4) & (lines["method"] == "bsp/ring")]["iteration_ms"].item()
    assert four == pytest.approx(1e3 * (step + ring_s(4, n, 2e-6, 200e9)), rel=1e-9)


def test_timeline_and_breakdown_of_bsp() -> None:
    at = run_page(**CUSTOM, gantt="bsp/ring")
    charts = chart_datasets(at)
    timeline = charts[-1]["timeline"]
    comm = timeline[timeline["lane"] == "communication"]
    assert len(comm) == 1
    ring = ring_s(8, 4e8, 10e-6, 25e9)
    assert comm["start_ms"].item() == pytest.approx(500.0)
    assert comm["end_ms"].item() == pytest.approx(1e3 * (0.5 + ring), rel=1e-9)
    backward = timeline[timeline["lane"] == "backward"]
    assert backward["start_ms"].min() == pytest.approx(500 / 3)  # 1:2 forward:backward split
    parts = charts[-2]["parts"]
    bsp = parts[parts["method"] == "bsp/ring"].set_index("part")["ms"]
    assert bsp["compute"] == pytest.approx(500.0) and bsp["compression"] == 0
    assert bsp["exposed communication"] == pytest.approx(1e3 * ring, rel=1e-9)


def test_per_layer_list_overlaps_backward() -> None:
    """Layers 1M, 2M, 3M: backward finishes layer 3 first (at half of backward), then 2, then 1.

    WFBP on one stream: m3 leaves at f + b/2, m2 at max(end of m3, f + 5b/6), m1 at
    max(end of m2, f + b); the iteration ends with the last message.
    """
    at = run_page(**{**CUSTOM, "workload": "Custom: per-layer list", "layers": "1M, 2M, 3M",
                     "methods": "wfbp/ring", "nodes": "1", "gpus": "2"})  # fmt: skip
    f, b = 0.5 / 3, 0.5 * 2 / 3

    def t(params: float) -> float:
        return ring_s(2, 4 * params, 2e-6, 200e9)

    end3 = f + b / 2 + t(3e6)
    end2 = max(end3, f + 5 * b / 6) + t(2e6)
    end1 = max(end2, f + b) + t(1e6)
    shown = table(at).loc["wfbp/ring", ITERATION]
    assert shown == pytest.approx(1e3 * max(end1, f + b), rel=1e-9)


def test_named_workload_equals_costmodels_predict() -> None:
    from costmodels.dp.predict import Cluster, predict
    from costmodels.hardware import LINKS
    from costmodels.workloads import get_workload

    at = run_page(nodes="2", gpus="8")
    shown = table(at)
    assert len(shown) == 7  # the default methods, one slot left for a custom one
    workload = get_workload("ResNet-50")
    profile = workload.profile("fp32")
    step = (profile.fwd_s + profile.bwd_s) * 32 / profile.batch_size  # H200 preset: no scaling
    eth = LINKS["100 GbE"]
    # The intra-node link follows the GPU (issue 30): H200 SXM's NVSwitch as NCCL counts it,
    # 18 NVLink 4 links x 20.6 GB/s = 370.8 GB/s per GPU, 2 us. One NIC per GPU (the default):
    # a GPU's share of the network is one NIC.
    cluster = Cluster(2, 8, 18 * 20.6e9, 2e-6, 1 / eth.beta_s_per_byte,
                      eth.alpha_s, gpu="H200 SXM", nics_per_node=8)  # fmt: skip
    from app_pages.compare_methods import parse_method

    for label in shown.index:
        expected = predict(workload, 32, step, cluster, parse_method(label))
        assert shown.loc[label, ITERATION] == pytest.approx(
            1e3 * expected.iteration_time_s, rel=1e-12
        )


def test_calibrated_profile_prices_both_levels() -> None:
    from costmodels.calibration.profile import ClusterProfile, LinkFit

    profile = ClusterProfile(
        name="lab",
        source="test",
        levels={"intra": LinkFit(alpha_s=3e-6, bandwidth_Bps=150e9),
                "inter": LinkFit(alpha_s=9e-6, bandwidth_Bps=20e9)},
    )  # fmt: skip
    query = {**CUSTOM, "intra": "Calibrated: lab", "inter": "Calibrated: lab"}
    at = run_page(state={"cluster_profile": profile}, **query)
    assert not at.warning, [w.value for w in at.warning]
    ring = ring_s(8, 4e8, 9e-6, 20e9)
    assert table(at).loc["bsp/ring", ITERATION] == pytest.approx(1e3 * (0.5 + ring))
    lines = chart_datasets(at)[0]["lines"]
    four = lines[(lines["p"] == 4) & (lines["method"] == "bsp/ring")]["iteration_ms"].item()
    assert four == pytest.approx(1e3 * (0.5 + ring_s(4, 4e8, 3e-6, 150e9)), rel=1e-9)


def test_fast_path_equals_predict_for_every_preset() -> None:
    """predict_fast (affine / memoised comm) against costmodels.dp.predict.predict, rel 1e-12."""
    from app_pages.compare_methods import PRESET_METHODS, parse_method, predict_fast
    from costmodels.dp.predict import Cluster, predict
    from costmodels.workloads import get_workload

    workload = get_workload("ResNet-50")
    clusters = [Cluster(1, 4, 200e9, 2e-6, 10e9, 5e-6), Cluster(3, 2, 200e9, 2e-6, 3e9, 30e-6)]
    for label in PRESET_METHODS:
        for cluster in clusters:
            fast = predict_fast(workload, 8, 0.2, cluster, parse_method(label))
            exact = predict(workload, 8, 0.2, cluster, parse_method(label))
            for field in ("iteration_time_s", "communication_s", "exposed_communication_s"):
                got, want = getattr(fast, field), getattr(exact, field)
                assert got == pytest.approx(want, rel=1e-12, abs=1e-15), (label, field)


def test_nics_per_node_and_the_gpu_set_nccls_system() -> None:
    """The inter link is per NIC: 2 NICs of 25 GB/s on 4-GPU nodes give each GPU 12.5 GB/s, and
    NCCL runs on that node (2 NICs) with the fabric of the chosen GPU."""
    from costmodels.dp.predict import Cluster, Method, predict
    from costmodels.workloads import get_workload

    at = run_page(**{**CUSTOM, "workload": "ResNet-50", "gpu": "A100 80GB SXM", "nics": "2",
                     "methods": "bsp/nccl,bsp/ring"})  # fmt: skip
    shown = table(at)
    workload = get_workload("ResNet-50")
    profile = workload.profile("fp32")
    step = (profile.fwd_s + profile.bwd_s) * 16 / profile.batch_size * 66.9 / 19.5  # fp32 peaks
    cluster = Cluster(2, 4, 200e9, 2e-6, 12.5e9, 10e-6, gpu="A100 80GB SXM", nics_per_node=2)
    for label, collective in (("bsp/nccl", "nccl"), ("bsp/ring", "ring")):
        want = predict(workload, 16, step, cluster, Method("allreduce", "bsp", collective))
        assert shown.loc[label, ITERATION] == pytest.approx(1e3 * want.iteration_time_s,
                                                               rel=1e-9)  # fmt: skip
    assert "2 NIC(s) per node = 50 GB/s per node" in at.caption[0].value


def test_changing_an_input_updates_numbers_and_url() -> None:
    at = run_page(**CUSTOM)
    before = table(at).loc["bsp/ring", ITERATION]
    at.sidebar.text_input(key="inter_bw").input("50 GB/s").run()
    after = table(at).loc["bsp/ring", ITERATION]
    assert after == pytest.approx(1e3 * (0.5 + ring_s(8, 4e8, 10e-6, 50e9)), rel=1e-9)
    assert after < before
    assert at.query_params["inter_bw"] in (["50 GB/s"], "50 GB/s")
    at.sidebar.number_input(key="nodes").set_value(1).run()
    assert sorted(set(chart_datasets(at)[0]["lines"]["p"])) == [1, 2, 3, 4]


def test_builder_adds_a_custom_method() -> None:
    at = run_page(**CUSTOM)
    at.sidebar.selectbox(key="b_sched").set_value("bsp")
    at.sidebar.selectbox(key="b_comp").set_value("fp16")
    at.sidebar.button(key="b_add").click().run()
    assert "bsp/nccl+fp16" in at.session_state["methods"]  # NCCL, the default all-reduce
    assert "bsp/nccl+fp16" in table(at).index
    assert "bsp/nccl+fp16" in str(at.query_params["methods"])


def test_builder_works_from_the_default_view() -> None:
    """Issue 17, item 6: the default view leaves a slot, so the first custom method is added."""
    at = run_page(nodes="1", gpus="2")
    assert len(at.session_state["methods"]) == 7
    at.sidebar.selectbox(key="b_comp").set_value("qsgd:8")
    at.sidebar.button(key="b_add").click().run()
    assert at.session_state["methods"][-1] == "wfbp/nccl+qsgd:8"
    assert shown(at.sidebar.caption[-1].value) == "Added wfbp/nccl+qsgd:8."


@pytest.mark.parametrize(
    ("query", "kind", "words"),
    [
        ({"nodes": "-3"}, "warning", "Nodes: -3 is outside"),
        ({"methods": "<script>alert(1)</script>"}, "warning", "Methods to compare: "),
        ({"batch": "many"}, "warning", "Batch size per GPU: 'many' is not a whole number"),
        ({"inter": CUSTOM_LINK, "inter_bw": "abc"}, "error", "Inter-node link bandwidth"),
        ({"inter": CUSTOM_LINK, "inter_bw": "0 Gbit/s"}, "error", "positive"),
        ({"intra": CUSTOM_LINK, "intra_lat": "-1 us"}, "error", "Intra-node link latency"),
        ({"workload": "Custom: parameter count", "params": "1e30"}, "error", "Parameters"),
        ({"workload": "Custom: per-layer list", "layers": "1M, x"}, "error", "item 2"),
        ({"gpu": OTHER_GPU, "step": "fast"}, "error", "Measured step time"),
        ({"gpu": OTHER_GPU, "step": "300"}, "error", "'300' needs a unit, e.g. 5 us"),
        ({"inter": "Calibrated: nope"}, "warning", "calibrated profile"),
        ({"methods": ""}, "warning", "at least one method"),
    ],
)
def test_bad_inputs_show_a_clear_message(query: dict, kind: str, words: str) -> None:
    at = run_page(**query)
    assert_message(at, kind, words)
    if kind == "error":
        assert not at.dataframe


@pytest.mark.parametrize("chunk", [0, 1, 2])
def test_every_preset_method_runs(chunk: int) -> None:
    from app_pages.compare_methods import PRESET_METHODS

    labels = PRESET_METHODS[chunk * 8 : chunk * 8 + 8]
    at = run_page(methods=",".join(labels), nodes="2", gpus="2")
    assert set(table(at).index) == set(labels)
    assert not at.warning


def test_every_workload_runs() -> None:
    from costmodels.workloads import NAMED_WORKLOADS

    at = run_page(methods="wfbp/ring", nodes="2", gpus="2")
    for name in NAMED_WORKLOADS:
        at.sidebar.selectbox(key="workload").set_value(name).run()
        assert not at.exception, (name, at.exception)
        assert not at.error, (name, [e.value for e in at.error])
        assert table(at).loc["wfbp/ring", ITERATION] > 0


def test_app_opens_on_compare() -> None:
    at = app_test(str(ROOT / "app.py"))
    assert at.title[0].value == "Compare methods"


def _step_caption(at: AppTest) -> str:
    return next(c.value for c in at.sidebar.caption if c.value.startswith("Step time used"))


def test_step_time_used_is_shown_and_the_field_disabled_when_ignored() -> None:
    """Issue 17, item 2: the field is live exactly when its time is used, and the caption under
    it says which step time the page uses."""
    from costmodels.formatting import format_seconds
    from costmodels.hardware import get_gpu
    from costmodels.workloads import get_workload

    at = run_page(nodes="1", gpus="2", gpu="A100 80GB SXM", batch="16")
    profile = get_workload("ResNet-50").profile("fp32")
    scaled = (profile.fwd_s + profile.bwd_s) * 16 / profile.batch_size
    scaled *= get_gpu("h200").fp32_tflops / get_gpu("a100-80gb").fp32_tflops
    assert at.sidebar.text_input(key="step").disabled
    assert f"Step time used: **{format_seconds(scaled)}**, the H200 profile" in _step_caption(at)
    assert f"single-GPU step {format_seconds(scaled)}" in at.caption[0].value
    # the user's choice: the measured time, on the same GPU
    at = run_page(nodes="1", gpus="2", gpu="A100 80GB SXM", stepsrc="measured", step="250 ms")
    assert not at.sidebar.text_input(key="step").disabled
    assert "**250 ms**, typed in the sidebar (chosen over the H200 profile)" in _step_caption(at)
    assert table(at).loc["bsp/nccl", COMPUTE] == pytest.approx(250.0)


def test_a_workload_without_a_profile_says_its_step_time_is_the_typed_one() -> None:
    """GPT-2 XL has no H200 profile: no silent fallback; the choice is not offered, the field is
    live and both captions say the typed time is used, and why."""
    at = run_page(workload="GPT-2 XL", nodes="1", gpus="2", step="1.5 s")
    assert not at.sidebar.text_input(key="step").disabled
    assert not [r for r in at.sidebar.radio if r.key == "stepsrc"]
    assert "**1.5 s**, typed in the sidebar: GPT-2 XL has no H200 profile" in _step_caption(at)
    assert "GPT-2 XL has no H200 profile to scale" in at.caption[0].value
    assert table(at).loc["bsp/nccl", COMPUTE] == pytest.approx(1500.0)


def test_one_line_answer_names_the_best_method_and_the_next() -> None:
    """Issue 17, item 5: the banner agrees with the table's first two rows."""
    at = run_page(**CUSTOM)
    shown = table(at).sort_values(ITERATION)
    best, runner = shown.index[:2]
    (banner,) = [s.value for s in at.success]
    assert banner.startswith("Best here (8 GPUs): **")
    from app_pages.compare_methods import describe
    from costmodels.formatting import format_number

    assert describe(best) in banner and f"(next: {describe(runner)}" in banner
    assert f"{format_number(shown.loc[best, ITERATION])} ms per iteration" in banner
    assert f"{format_number(shown.loc[best, EFFICIENCY])} % scaling efficiency" in banner


def test_custom_and_calibrated_links_show_their_values_rounded() -> None:
    """Issue 17, items 3 and 6: a custom link's numbers are in the caption; calibrated ones are
    rounded to 3 significant digits; each bandwidth says what it counts."""
    from costmodels.calibration.profile import ClusterProfile, LinkFit

    caption = run_page(**CUSTOM).caption[0].value
    assert "Intra-node link: custom, 200 GB/s, 2 µs, per GPU and direction" in caption
    assert "Inter-node link: custom, 25 GB/s, 10 µs, per NIC and direction" in caption
    assert "4 NIC(s) per node = 100 GB/s per node" in caption
    odd = LinkFit(alpha_s=3.14159e-6, bandwidth_Bps=150.123456e9)
    profile = ClusterProfile(name="lab", source="test", levels={"intra": odd, "inter": odd})
    at = run_page(state={"cluster_profile": profile}, **{**CUSTOM, "intra": "Calibrated: lab"})
    assert "calibrated 'lab' intra fit, 150 GB/s, 3.14 µs" in at.caption[0].value


def test_calibrated_profile_without_the_level_asked_for_is_an_error() -> None:
    """Issue 17, item 9: no silent NVLink-speed network from a one-node profile."""
    from costmodels.calibration.profile import ClusterProfile, LinkFit

    nvlink = LinkFit(alpha_s=3e-6, bandwidth_Bps=150e9)
    one_node = ClusterProfile(name="lab", source="test", levels={"intra": nvlink})
    at = run_page(state={"cluster_profile": one_node}, **{**CUSTOM, "inter": "Calibrated: lab"})
    assert_message(at, "error", "Inter-node link: the calibrated profile 'lab' has no inter")
    assert not at.dataframe


def test_part_colours_mean_the_same_in_every_chart() -> None:
    """Issue 17, item 6: compute, communication and compression keep one colour each."""
    from app_pages.charts import PART_COLOURS

    at = run_page(**{**CUSTOM, "methods": "bsp/ring,wfbp/ring+topk:0.01"})
    specs = [__import__("json").loads(c.proto.spec) for c in at.get("vega_lite_chart")]
    scales = {}
    for spec in specs:
        colour = spec.get("encoding", {}).get("color", {})
        if colour.get("field") in ("part", "lane"):
            scales.update(zip(colour["scale"]["domain"], colour["scale"]["range"], strict=True))
    assert scales["compression"] == PART_COLOURS["compression"] != PART_COLOURS["communication"]
    assert scales["exposed communication"] == scales["communication"] == "#f58518"
    assert scales["compute"] == scales["backward"]


def test_old_links_with_the_measured_pseudo_gpu_still_open() -> None:
    """URLs written before issue 17 carry gpu=Measured step time: read as the links-only GPU."""
    at = run_page(**{**CUSTOM, "gpu": "Measured step time"})
    assert not at.warning, [w.value for w in at.warning]
    assert at.sidebar.selectbox(key="gpu").value == OTHER_GPU
    assert "single-GPU step 500 ms (typed in the sidebar)" in at.caption[0].value


def test_the_breakdown_follows_the_cluster_size() -> None:
    """Issue 42, item 3: Nodes 4 -> 8 made the caption say 64 GPUs while the headline stayed
    "Best here (32 GPUs)" and the table "At 32 GPUs"; a count chosen below the cluster stays."""
    at = run_page(**CUSTOM)  # 2 nodes x 4 GPUs
    assert "Best here (8 GPUs)" in at.success[0].value
    at.sidebar.number_input(key="nodes").set_value(8).run()
    assert "Best here (32 GPUs)" in at.success[0].value
    assert any(c.value.startswith("32 GPUs (8 nodes") for c in at.caption)
    assert "At 32 GPUs" in [h.value for h in at.subheader]
    at.sidebar.selectbox(key="at").set_value(4).run()
    at.sidebar.number_input(key="nodes").set_value(2).run()
    assert "Best here (4 GPUs)" in at.success[0].value
