"""The transfer benchmark's dev sources are the validation corpus's rows (issue 37 item 3).

One reader per dev file: the measured-step transfer (benchmarks/step_transfer_sources.py) takes
the corpus rows of llm-foundry and dgxc with every assumption the corpus states (recipe, layout,
cluster), grouped by model (and GPU for llm-foundry).
"""

from __future__ import annotations

from costmodels.validation.corpus import load_corpus
from costmodels.validation.transfer_sources import SOURCES, as_measured_run, corpus_runs


def test_llmfoundry_runs_are_the_corpus_rows_with_their_recipe() -> None:
    runs, left_out = corpus_runs("llmfoundry")
    rows = load_corpus(("llmfoundry",))
    assert left_out == 0 and len(runs) == len(rows) == 216
    by_label = {r.label: r for r in rows}
    for source_run in runs:
        row = by_label[source_run.run.label]
        assert source_run.run.seconds == row.measured_s
        assert source_run.run.layout == row.layout and source_run.run.shape == row.shape
        assert source_run.cluster == row.cluster
        recipe = source_run.run.recipe
        assert recipe is not None and recipe.fused_loss and recipe.dropout is False
        assert recipe.attention_kernel == "triton"
        model, gpu = row.label.split()[0], row.cluster.gpu.name
        assert source_run.group == f"{model} {gpu}"


def test_dgxc_runs_keep_the_corpus_assumptions_and_group_by_model() -> None:
    runs, left_out = corpus_runs("dgxc")
    assert len(runs) + left_out == len(load_corpus(("dgxc",)))
    assert {r.group for r in runs} >= {"llama3.1-8b", "gpt3-175b", "nemotron4-340b"}
    for source_run in runs:
        assert source_run.run.layout.zero == 1  # the distributed optimizer (dgxc.py)
        recipe = source_run.run.recipe
        assert recipe is not None and recipe.reduce_dtype == "bf16"
        assert recipe.async_tp == (source_run.run.layout.tp > 1)
    nemotron = [r for r in runs if r.group == "nemotron4-340b"]
    assert nemotron and all(r.run.layout.interleave == 12 for r in nemotron)


def test_sources_and_the_round_trip_of_a_row() -> None:
    assert set(SOURCES) == {"torchtitan async-TP", "llm-foundry MPT FSDP", "dgxc Megatron H100"}
    row = load_corpus(("llmfoundry",))[0]
    run = as_measured_run(row)
    assert run.options == row.options



def test_the_ceiling_moves_with_the_measured_factor_on_llmfoundry() -> None:
    """Issue 37 item 3: a measured step's factor is relative to the model as it predicts, MFU
    ceiling included (StepCalibration.moves_ceiling). MPT-3B on A100 80GB at 2k runs 7 % faster
    than the model, which stretches that layout toward the ceiling; with the ceiling dropped
    the fit read it as slow kernels (factor 1.06) and put the 16k-64k runs 8-13 % too slow.
    Moved with the factor, the factor is < 1 and the step reproduced; over every 4th llm-foundry
    run as the reference the transfer is within 8.5 % mean (9.6 % with the ceiling dropped;
    benchmarks/step_transfer_sources.py prints every reference: 9.4 -> 7.9 %)."""
    import statistics

    from costmodels.calibration.step_transfer import fit_one_step, run_time
    from costmodels.validation.transfer_sources import one_step_transfers

    runs = SOURCES["llm-foundry MPT FSDP"]()
    ref = next(s for s in runs if s.group == "mpt-3b A100 80GB SXM"
               and s.run.label.startswith("mpt-3b a100_80gb amp_bf16 seq 2048 "))  # fmt: skip
    fit = fit_one_step(ref.run, ref.cluster)
    assert fit.calibration.moves_ceiling and fit.calibration.gemm_scale < 1.0
    assert "MFU ceiling" in fit.reason
    own = run_time(ref.run, ref.cluster, fit.calibration, fit.network_scale)
    assert abs(own / ref.run.seconds - 1) < 1e-6
    errors = one_step_transfers(runs, fit_one_step, 54)
    assert len(errors) == 54 and statistics.mean(errors) < 0.085
