"""The validation corpus (issue 36): one loader for every dev training set, regime tags, the fit's
row filter, the flat baselines and the memory verdicts of runs that really trained."""

from __future__ import annotations

import math

import pytest

from costmodels.llm.memory import MAY_NOT_FIT_BAND, memory_verdict
from costmodels.validation.corpus import SOURCES, load_corpus, select
from costmodels.validation.llmfoundry import read_rows
from costmodels.validation.loso import (
    fit_filtered,
    flat_by_generation,
    flat_time,
    log_errors,
    mape,
    measured_share,
    predict,
    source_weights,
)

# rows per source in the dev files (vTrain's even rows, Table 1, Korthikanti's 8, torchtitan's
# 12 H100 + 2 H200, nanotron's 10, llm-foundry's 216, DGX Cloud's 86)
ROWS = {"vtrain": 720, "narayanan": 10, "korthikanti": 8, "torchtitan": 14, "nanotron": 10,
        "llmfoundry": 216, "dgxc": 86}  # fmt: skip
TAGS = ("source", "gpu", "generation", "framework", "precision", "parallel", "moe", "scale",
        "seq", "recompute")  # fmt: skip


def test_one_loader_reads_every_source_with_its_tags() -> None:
    corpus = load_corpus()
    assert {s: sum(r.source == s for r in corpus) for s in SOURCES} == ROWS
    for row in corpus:
        assert set(TAGS) <= set(row.tags), row.label
        assert row.measured_s > 0 and row.ran
    assert {r.tags["generation"] for r in corpus} == {"ampere", "hopper"}
    assert len(select(corpus, source="dgxc", moe="moe")) == 18  # Grok-1, bf16 and fp8
    assert len(select(corpus, source="llmfoundry", generation="ampere")) == 139


def test_llmfoundry_step_time_gives_back_the_published_tokens_per_gpu() -> None:
    rows = read_rows()
    corpus = load_corpus(("llmfoundry",))
    for raw, row in zip(rows, corpus, strict=True):
        assert row.tokens_per_s_per_gpu == pytest.approx(float(raw["tok_per_s_per_gpu"]))


def test_unknown_source_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown source.*nope"):
        load_corpus(("vtrain", "nope"))


def test_every_dev_run_that_ran_is_not_ruled_out() -> None:
    """Every row of every dev file trained, so none may be judged 'does not fit'."""
    verdicts = {r.label: predict(r).memory_verdict for r in load_corpus()}
    assert [label for label, v in verdicts.items() if v == "does not fit"] == []
    assert sum(v == "fits" for v in verdicts.values()) >= len(verdicts) - 3


def test_memory_verdict_has_a_may_not_fit_band() -> None:
    usable = 80.0
    assert memory_verdict(80.0, usable) == "fits"
    assert memory_verdict(80.0 * (1 + MAY_NOT_FIT_BAND / 2), usable) == "may not fit"
    assert memory_verdict(80.0 * (1 + 2 * MAY_NOT_FIT_BAND), usable) == "does not fit"


def test_fit_takes_a_row_filter_and_weighs_sources_alike() -> None:
    corpus = load_corpus(("nanotron", "korthikanti"))
    weights = source_weights(corpus)
    assert sum(w**2 for w in weights) == pytest.approx(2.0)  # each source sums to 1
    fitted = fit_filtered(corpus, lambda r: r.source == "nanotron",
                          names=("hopper_tensor_rate",), iterations=4)  # fmt: skip
    assert fitted.sources == ("nanotron",)
    nano = [r for r in corpus if r.source == "nanotron"]
    from costmodels.llm.constants import StepConstants

    before = mape(log_errors(nano, StepConstants()))
    assert mape(log_errors(nano, fitted.constants)) < before


def test_flat_baseline_reproduces_a_run_at_its_own_share() -> None:
    corpus = load_corpus(("nanotron", "korthikanti"))
    for row in corpus:
        assert flat_time(row, measured_share(row)) == pytest.approx(row.measured_s)
    shares = flat_by_generation(corpus)
    assert set(shares) == {"ampere", "hopper"}
    korth = [measured_share(r) for r in corpus if r.source == "korthikanti"]
    assert shares["ampere"] == pytest.approx(math.exp(sum(map(math.log, korth)) / len(korth)))


def test_a_users_own_csv_enters_the_same_table(tmp_path) -> None:  # noqa: ANN001
    from costmodels.validation.report import validation_report
    from costmodels.validation.user_runs import read_user_rows

    nanotron = load_corpus(("nanotron",))[0]
    path = tmp_path / "ours.csv"
    path.write_text("# two of our runs\nstep_s,tp,pp,dp,mb\n0.9,2,1,1,3\n0.5,4,1,1,3\n")
    rows = read_user_rows(path, nanotron.cluster, shape=nanotron.shape, global_batch=3,
                          framework="pytorch")  # fmt: skip
    assert [r.source for r in rows] == ["user", "user"] and rows[1].layout.tp == 4
    assert rows[0].tags["generation"] == "hopper" and rows[0].tags["parallel"] == "tp2"
    report = validation_report(rows=rows)
    assert report["per_source"]["user"]["rows"] == 2
    assert report["per_source"]["user"]["loso_mape_pct"] is None  # never held out: not stored
    path.write_text("step_s,tp,pp,dp,nonsense\n1,1,1,1,2\n")
    with pytest.raises(ValueError, match="ours.csv:1: columns must include step_s"):
        read_user_rows(path, nanotron.cluster, shape=nanotron.shape, global_batch=3)


def test_a_constant_the_rows_cannot_see_stays_at_its_start() -> None:
    """Levenberg-Marquardt divides by each constant's curvature: one the residuals do not depend
    on (host_s_per_kernel for sources with no host-bound run) was thrown to a bound; tied to its
    start it stays there, and a constant the rows do see still reaches its optimum."""
    import numpy as np

    from costmodels.llm.constants import StepConstants
    from costmodels.llm.fit_constants import fit
    from costmodels.validation.loso import BOUNDS, host_prior

    start = StepConstants(gemm_sustained=0.5, host_s_per_kernel=host_prior())

    def residuals(c: StepConstants, _link: dict) -> np.ndarray:
        # sees gemm_sustained; host_s_per_kernel only at the level of rounding noise
        gemm = math.log(c.gemm_sustained / 0.8)
        return np.asarray([gemm, 0.5 * gemm, 1e-7 * c.host_s_per_kernel / 1e-5])

    names = ("gemm_sustained", "host_s_per_kernel")
    tied = fit(residuals, names, start, bounds=BOUNDS, iterations=10, tie=0.01).constants
    assert tied.gemm_sustained == pytest.approx(0.8, rel=1e-3)
    assert tied.host_s_per_kernel == pytest.approx(start.host_s_per_kernel, rel=1e-2)
    loose = fit(residuals, names, start, bounds=BOUNDS, iterations=10).constants
    assert loose.host_s_per_kernel == pytest.approx(BOUNDS["host_s_per_kernel"][0])


def test_the_host_start_is_the_probes_measurement() -> None:
    """The refits start host_s_per_kernel at benchmarks/llm_host_probe.py's value (a host-bound
    Megatron-style layer measured outside every dev source), inside the fit's bounds."""
    import json

    from costmodels.validation.loso import BOUNDS, HOST_PROBE, host_prior

    record = json.loads(HOST_PROBE.read_text())
    assert host_prior() == record["host_s_per_kernel"]
    low, high = BOUNDS["host_s_per_kernel"]
    assert low < host_prior() < high
    per_layer = record["cpu_s_per_layer"] + record["cuda_launches_per_layer"] * record[
        "cuda_launch_host_s"]
    assert host_prior() == pytest.approx(per_layer / record["modelled_launches_per_layer"])
    # the probe's layer launches at least the kernels the model counts for it
    assert record["cuda_launches_per_layer"] >= record["modelled_launches_per_layer"]


def _dispatch_cost():  # noqa: ANN202 - the benchmark module
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "cuda_dispatch_cost.py"
    spec = importlib.util.spec_from_file_location("cuda_dispatch_cost", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cuda_host_work_per_launch_is_the_profiles_regression() -> None:
    """benchmarks/cuda_dispatch_cost.py: CUDA-event time of the H200 profile's host-bound op
    sequences, less one pass over the data and the same sequences' CPU-backend time, regressed
    on their launches; the shipped probe used its slope."""
    import json

    from costmodels.validation.loso import HOST_PROBE

    m = _dispatch_cost()
    # a made-up profile: 2 us fixed + 9 us per launch + the CPU-backend time + one pass
    cpu = {"fp16_cast_s": 1e-6, "randomk_0.01_s": 3e-6, "qsgd_8bit_s": 18e-6}
    launches = {"fp16_cast_s": 1, "randomk_0.01_s": 2, "qsgd_8bit_s": 12}
    rows = [{"numel": n, "read_once_floor_s": floor, **{
        key: 2e-6 + 9e-6 * launches[key] + cpu[key] + floor for key in cpu}}
        for n, floor in ((1 << 20, 2e-6), (1 << 22, 8e-6), (1 << 24, 1.0))]  # fmt: skip
    points = m.dispatch_points({"compression": rows}, cpu, launches)
    assert len(points) == 6  # the 16 Mi row (GPU-bound) is left out
    slope, intercept = m.per_launch(points)
    assert slope == pytest.approx(9e-6) and intercept == pytest.approx(2e-6)
    with pytest.raises(ValueError, match="two launch counts"):
        m.per_launch([(1, 1e-5), (1, 2e-5)])
    with pytest.raises(ValueError, match="numel"):
        m.dispatch_points({"compression": rows[2:]}, cpu, launches)

    record = json.loads(HOST_PROBE.read_text())
    shipped = m.per_launch([tuple(p) for p in record["cuda_dispatch_points"]])[0]
    assert record["cuda_launch_host_s"] == pytest.approx(shipped)
    # more than the bare launch ("about 4-6 us"), less than a whole eager op of a model forward
    assert 5e-6 < shipped < 20e-6


def test_megatron_on_hopper_has_its_own_tensor_rate_and_te_its_own_casts() -> None:
    """Issue 36: the Hopper rate and the float8 cast share fitted on the PyTorch stacks are
    theirs; Megatron kernels on Hopper take their own rate (1 until a fit holds such runs) and
    Transformer Engine recipes their own cast share (0: torchao's), and a fit only frees what
    its rows can inform."""
    from dataclasses import replace

    from costmodels.llm.constants import FITTED_WHERE_PRESENT, StepConstants
    from costmodels.validation.loso import informed_names

    c = StepConstants(hopper_tensor_rate=0.7, megatron_hopper_tensor_rate=0.9,
                      fp8_cast_efficiency=0.4)  # fmt: skip
    assert c.tensor_rate("H100 SXM", "pytorch-compile") == 0.7
    assert c.tensor_rate("H100 SXM", "megatron") == 0.9
    assert c.tensor_rate("A100 80GB SXM", "megatron") == c.tensor_rate("A100 80GB SXM") == 1.0
    assert c.cast_efficiency("delayed") == 0.4  # 0: as torchao's
    own = replace(c, te_fp8_cast_efficiency=0.2)
    assert (own.cast_efficiency("delayed"), own.cast_efficiency("rowwise")) == (0.2, 0.4)
    dgxc = load_corpus(("dgxc",))
    assert informed_names(dgxc) == FITTED_WHERE_PRESENT
    assert informed_names([r for r in dgxc if r.options["precision"] == "bf16"]) == (
        "megatron_hopper_tensor_rate",)  # fmt: skip
    assert informed_names(load_corpus(("torchtitan", "korthikanti"))) == ()
    fp8 = next(r for r in dgxc if r.options["precision"] == "fp8")
    assert predict(fp8, own).iteration_time_s > predict(fp8, c).iteration_time_s
