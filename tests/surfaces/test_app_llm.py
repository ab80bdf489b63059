"""The LLM planner page with Streamlit's AppTest: the layouts shown are the planner's, priced right.

Expected values are rebuilt here from the sources the page should use (model shapes from the
workload catalogues, GPU and link presets from costmodels.hardware, the layout validity rules of
costmodels.llm.planner, the step model costmodels.llm.step) without going through app_pages, so
a wrong shape, link conversion, input binding or ranking fails the test. Times are compared at
rel 1e-9 (the same float computation, only the path to its inputs differs).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from app_helpers import app_test, assert_message
from streamlit.testing.v1 import AppTest

from costmodels.hardware import GPUS, LINKS
from costmodels.llm.planner import enumerate_layouts, plan
from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape
from costmodels.llm.step import predict_step
from costmodels.profile import ClusterProfile, LinkFit
from costmodels.workloads.llama import LLAMA_CONFIGS

PAGE = str(Path(__file__).parents[2] / "app_pages" / "llm_planner.py")


run_page = partial(app_test, PAGE)


def llama(name: str, seq: int) -> TransformerShape:
    layers, d, ffn, heads, kv, vocab = LLAMA_CONFIGS[name]
    return TransformerShape(
        layers=layers, hidden=d, heads=heads, seq_len=seq, ffn=ffn, vocab=vocab, kv_heads=kv,
        gated_mlp=True, tied_embeddings=False,
    )  # fmt: skip


def preset(name: str) -> tuple[float, float]:
    """(bandwidth, latency) of a link preset: nominal rate x achievable fraction, typical alpha."""
    link = LINKS[name]
    return link.bandwidth_Bps * link.achievable_fraction, link.latency_s


def cluster(gpu: str, per_node: int, intra: str, inter: str) -> LLMCluster:
    (bw_in, lat_in), (bw_out, lat_out) = preset(intra), preset(inter)
    return LLMCluster(GPUS[gpu], per_node, bw_in, bw_out, lat_in, lat_out)


def first_row_layout(at: AppTest, batch: int) -> Layout:
    row = at.dataframe[0].value.iloc[0]
    return Layout(
        tp=int(row["TP"]), pp=int(row["PP"]), dp=int(row["DP"]), global_batch=batch,
        micro_batch=int(row["micro-batch"]), interleave=int(row["v"]), zero=int(row["ZeRO"]),
        sequence_parallel=bool(row["SP"]), recompute=row["recompute"],
        schedule="interleaved" if int(row["v"]) > 1 else "1f1b",
    )  # fmt: skip


def test_defaults_best_layout_is_the_planners_and_priced_by_predict_step() -> None:
    at = run_page()
    shape = llama("Llama 2 7B", 4096)
    machine = cluster("A100 80GB SXM", 8, "NVLink 3 (A100)", "InfiniBand HDR")
    choices = dict(micro_batches=(1, 2, 4), zero_stages=(0, 1))
    valid = [
        lay for lay in enumerate_layouts(shape, 16, machine, 256, **choices) if lay.interleave <= 4
    ]
    assert f"**{len(valid):,} valid layouts**" in at.markdown[0].value
    fitting = [lay for lay in valid if predict_step(shape, lay, machine).fits]
    assert f"{len(fitting):,} fit in memory" in at.markdown[0].value
    best = first_row_layout(at, 256)
    expected = [c for c in plan(shape, 16, machine, 256, **choices) if c.layout.interleave <= 4][0]
    assert best == expected.layout
    shown = at.dataframe[0].value.iloc[0]
    step = predict_step(shape, best, machine)
    assert shown["step time (s)"] == pytest.approx(step.iteration_time_s, rel=1e-9)
    assert shown["memory/GPU (GiB)"] == pytest.approx(step.memory_per_gpu_bytes / 2**30, rel=1e-9)
    assert shown["DP comm (s)"] == pytest.approx(step.dp_comm_s, rel=1e-9)
    assert at.metric[0].value == f"{step.iteration_time_s:.4g} s"
    assert len(at.dataframe[0].value) == 15
    assert list(at.dataframe[0].value["step time (s)"]) == sorted(
        at.dataframe[0].value["step time (s)"]
    )
    assert at.query_params["model"] == ["Llama 2 7B"] or at.query_params["model"] == "Llama 2 7B"


def test_query_parameters_set_model_cluster_and_search() -> None:
    query = dict(model="GPT-3 175B", seq="2048", gbatch="512", nodes="8", gpus="8",
                 gpu="H100 SXM", intra="NVLink 4 (H100)", inter="InfiniBand NDR", mbs="1",
                 zero="0,1", rc="full", sp="on", maxv="2")  # fmt: skip
    at = run_page(**query)
    shape = TransformerShape(layers=96, hidden=12288, heads=96, seq_len=2048, vocab=50257)
    machine = cluster("H100 SXM", 8, "NVLink 4 (H100)", "InfiniBand NDR")
    best = first_row_layout(at, 512)
    assert best.micro_batch == 1 and best.recompute == "full" and best.interleave <= 2
    assert best.sequence_parallel or best.tp == 1
    choices = dict(
        micro_batches=(1,), zero_stages=(0, 1), recompute=("full",), sequence_parallel=(True,)
    )
    expected = [c for c in plan(shape, 64, machine, 512, **choices) if c.layout.interleave <= 2][0]
    assert best == expected.layout
    shown = at.dataframe[0].value.iloc[0]["step time (s)"]
    assert shown == pytest.approx(predict_step(shape, best, machine).iteration_time_s, rel=1e-9)
    assert "64 GPUs (8 nodes x 8 H100 SXM" in at.caption[0].value


def test_custom_size_follows_the_gpt3_proportions() -> None:
    at = run_page(model="Custom size", llm_size="30B", seq="2048", gbatch="64")
    hidden = 1024 * round((128 * 30e9 / 12) ** (1 / 3) / 1024)  # 7168
    layers = round(30e9 / (12 * hidden**2))  # 49
    assert (hidden, layers) == (7168, 49)
    assert f"{layers} layers, hidden {hidden}, {hidden // 128} heads" in at.caption[0].value


def test_calibrated_profile_from_a_real_log_prices_the_inter_link() -> None:
    """The Calibrate page's profile of the 2-node log, used as the inter-node link here."""
    from costmodels.profile import parse_nccl_tests, profile_from_measurements

    log = Path(__file__).parents[1] / "costmodels/data/nccl_tests/oke_2x8xa100_allreduce.txt"
    profile = profile_from_measurements(
        parse_nccl_tests(log.read_text(), "all-reduce"), "oke", "nccl-tests"
    )
    at = run_page(state={"cluster_profile": profile}, inter="Calibrated: oke", nodes="4")
    bus = profile.collectives["all-reduce"]["inter"]
    bw_in, lat_in = preset("NVLink 3 (A100)")
    machine = LLMCluster(
        GPUS["A100 80GB SXM"], 8, bw_in, bus.bandwidth_Bps / 8, lat_in, bus.alpha_s
    )  # one GPU's share of the 2-node bus bandwidth (8 GPUs per node)
    best = first_row_layout(at, 256)
    step = predict_step(llama("Llama 2 7B", 4096), best, machine)
    assert at.dataframe[0].value.iloc[0]["step time (s)"] == pytest.approx(step.iteration_time_s)


def test_calibrated_profile_prices_the_links() -> None:
    profile = ClusterProfile(
        name="lab", source="test",
        levels={"intra": LinkFit(alpha_s=3e-6, bandwidth_Bps=200e9),
                "inter": LinkFit(alpha_s=8e-6, bandwidth_Bps=10e9)},
    )  # fmt: skip
    at = run_page(
        state={"cluster_profile": profile}, intra="Calibrated: lab", inter="Calibrated: lab"
    )
    assert "calibrated 'lab' inter fit" in at.caption[0].value
    machine = LLMCluster(GPUS["A100 80GB SXM"], 8, 200e9, 10e9, 3e-6, 8e-6)
    best = first_row_layout(at, 256)
    step = predict_step(llama("Llama 2 7B", 4096), best, machine)
    assert at.dataframe[0].value.iloc[0]["step time (s)"] == pytest.approx(step.iteration_time_s)


def test_changing_an_input_updates_numbers_and_url() -> None:
    at = run_page()
    at.sidebar.number_input(key="nodes").set_value(4).run()
    assert not at.exception
    assert "32 GPUs (4 nodes x 8" in at.caption[0].value
    assert at.query_params["nodes"] in (["4"], "4")
    best = first_row_layout(at, 256)
    assert best.gpus == 32
    machine = cluster("A100 80GB SXM", 8, "NVLink 3 (A100)", "InfiniBand HDR")
    step = predict_step(llama("Llama 2 7B", 4096), best, machine)
    assert at.dataframe[0].value.iloc[0]["step time (s)"] == pytest.approx(step.iteration_time_s)


@pytest.mark.parametrize(
    ("query", "kind", "words"),
    [
        (dict(model="Custom size", llm_size="lots"), "error", "Model size: cannot read 'lots'"),
        (dict(model="Custom size", llm_size="1000T"), "error", "outside"),
        (dict(model="Custom size", llm_size="-5B"), "error", "Model size"),
        (dict(model="Llama 3 405B", nodes="1", gpus="1"), "error", "None of the"),
        (dict(gbatch="1", mbs="2"), "error", "No valid layout"),
        (dict(nodes="4096", gpus="64"), "error", "more than this page plans"),
        (dict(mbs="", zero=""), "error", "Search: choose at least one"),
        (dict(intra="Custom bandwidth / latency", intra_bw="0 GB/s"), "error", "Intra-node link"),
        (dict(inter="Custom bandwidth / latency", inter_lat="fast"), "error", "Inter-node link"),
        (dict(nodes="-3"), "warning", "URL parameter nodes='-3' ignored"),
        (dict(gpu="<script>alert(1)</script>"), "warning", "URL parameter gpu="),
        (dict(seq="abc", mbs="3"), "warning", "URL parameter seq='abc' ignored"),
        (dict(intra="Calibrated: ghost"), "warning", "no such calibrated profile"),
    ],
)  # fmt: skip
def test_hostile_inputs_show_one_clear_message(query: dict, kind: str, words: str) -> None:
    at = run_page(**query)
    assert_message(at, kind, words)


def test_every_model_and_gpu_preset_renders() -> None:
    """No preset raises: each named model on 4 x 8 GPUs, each GPU preset on the default model."""
    from app_pages.llm_models import MODEL_CHOICES

    at = run_page(nodes="4", mbs="1", zero="1", rc="full", sp="on", maxv="1")
    for model in MODEL_CHOICES:
        at.sidebar.selectbox(key="model").set_value(model).run()
        assert not at.exception, model
        assert at.dataframe or any("None of the" in e.value for e in at.error), model
    for gpu in GPUS:
        at.sidebar.selectbox(key="gpu").set_value(gpu).run()
        assert not at.exception, gpu
