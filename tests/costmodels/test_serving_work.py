"""The serving engine's work bound (costmodels.serving.work, issue 35): inputs the engine would
take minutes over are refused before any step runs, with the cap in the message; the estimate
counts the steps the engine really takes (never fewer) in the regime the old bound missed, where
requests queue for KV memory and every iteration is a step."""

from __future__ import annotations

import pytest

from app_pages.serving_compute import cluster_of
from costmodels.limits import MAX_ENGINE_WORK
from costmodels.serving import plan as plan_module
from costmodels.serving import scheduler
from costmodels.serving.engine import EngineConfig, kv_pool
from costmodels.serving.layout import ServingLayout
from costmodels.serving.plan import SLO, Deployment, plan_serving
from costmodels.serving.presets import serving_shape
from costmodels.serving.requests import make_requests
from costmodels.serving.simulate import iteration_cost, simulate_serving
from costmodels.serving.work import EngineWorkError, simulation_work

CAP = f"at most {MAX_ENGINE_WORK:,}"


def _no_engine(*_args, **_kwargs):  # noqa: ANN002, ANN003, ANN202
    raise AssertionError("the engine ran although the work bound should refuse the input")


@pytest.mark.parametrize(
    ("mode", "rate", "n"), [("offline", None, 3000), ("server", 50.0, 100_000)]
)
def test_the_issue_probes_are_refused_before_the_engine_runs(monkeypatch, mode, rate, n) -> None:  # noqa: ANN001
    """predict-serving --gpu b200 --tp 8 --prompt-len 131072 --output-len 32768: before, 57 k
    estimated steps passed the 5 M bound and the engine ran for minutes."""
    monkeypatch.setattr("costmodels.serving.simulate.simulate_engine", _no_engine)
    requests = make_requests(n, mode=mode, rate=rate, prompt_len=131072, output_len=32768)
    shape = serving_shape("Llama 3.1 70B", 131072 + 32768)
    with pytest.raises(EngineWorkError, match=CAP) as info:
        simulate_serving(shape, ServingLayout(8), cluster_of("B200"), requests, EngineConfig())
    assert "--requests" in str(info.value) and len(str(info.value).splitlines()) == 1


def _steps(monkeypatch, requests, shape, layout, cluster, engine) -> int:  # noqa: ANN001
    count = [0]
    step = scheduler._Engine.step

    def counted(self):  # noqa: ANN001, ANN202
        count[0] += 1
        return step(self)

    monkeypatch.setattr(scheduler._Engine, "step", counted)
    simulate_serving(shape, layout, cluster, requests, engine)
    return count[0]


@pytest.mark.parametrize(
    ("mode", "rate", "n", "engine"),
    [("offline", None, 48, EngineConfig()), ("server", 0.5, 48, EngineConfig()),
     ("server", 20.0, 48, EngineConfig()),
     ("offline", None, 8, EngineConfig(chunked_prefill=False)),
     ("server", 0.05, 8, EngineConfig(chunked_prefill=False))],
)  # fmt: skip
def test_the_estimate_counts_the_steps_of_a_queueing_engine(monkeypatch, mode, rate, n, engine) -> None:  # noqa: ANN001, E501
    """KV memory holds a handful of long sequences (or, without chunked prefill, a prompt longer
    than the token budget joins only an idle engine): requests queue and each iteration is a
    step. The estimate is at least the steps taken and, offline, within a factor two of them."""
    shape = serving_shape("Llama 3.1 70B", 32768 + 1024)
    layout, cluster = ServingLayout(4), cluster_of("H100 SXM")
    requests = make_requests(n, mode=mode, rate=rate, prompt_len=32768, output_len=1024)
    pool = kv_pool(shape, layout, cluster, engine)
    units = simulation_work(
        requests, engine, pool, iteration_cost(shape, layout, cluster, engine, requests)
    )
    steps = _steps(monkeypatch, requests, shape, layout, cluster, engine)
    assert steps <= units
    if mode == "offline":
        assert units <= 2 * steps + 1000, (units, steps)


def test_a_plan_over_the_bound_is_refused_before_any_simulation(monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(plan_module, "simulate_serving", _no_engine)
    deployments = [
        Deployment(gpu, ServingLayout(tp, 1, 1, precision, precision))
        for gpu in ("H100 SXM", "H200 SXM", "B200")
        for tp in (4, 8)
        for precision in ("bf16", "fp8")
    ]
    requests = make_requests(3000, mode="server", rate=1.0, prompt_len=131072, output_len=32768)
    with pytest.raises(EngineWorkError, match=CAP):
        plan_serving(serving_shape("Llama 3.1 70B", 163840), deployments, cluster_of,
                     EngineConfig(), requests, SLO(600.0, 1.0), top=5)  # fmt: skip


def test_past_the_bound_a_worthy_deployment_keeps_its_estimate_and_says_why(monkeypatch) -> None:  # noqa: ANN001
    """The ``top`` searches are judged up front; a later deployment that could still rank is
    simulated only within the bound (here none is left), else its row says why not."""
    deployments = [Deployment(gpu, ServingLayout(tp, 1, 1, "fp8", "fp8"))
                   for gpu in ("H100 SXM", "H200 SXM") for tp in (1, 2)]  # fmt: skip
    requests = make_requests(100, mode="server", rate=1.0, prompt_len=512, output_len=64)
    args = (serving_shape("Llama 3.1 8B", 576), deployments, cluster_of, EngineConfig(), requests,
            SLO(2.0, 0.05))  # fmt: skip
    free = plan_serving(*args, top=1)
    assert sum(r.simulated for r in free) > 1  # more than the top one was worth simulating
    monkeypatch.setattr(plan_module, "PLAN_WORK", 0)
    with pytest.raises(EngineWorkError, match="at most 0"):  # the top search alone is over
        plan_serving(*args, top=1)
    monkeypatch.setattr(plan_module, "PLAN_WORK", plan_module.SIMULATIONS * 250)
    monkeypatch.setattr(plan_module, "simulation_work", lambda *_a, **_k: 250.0)
    bounded = plan_serving(*args, top=1)
    assert sum(r.simulated for r in bounded) == 1
    assert any("engine work bound" in r.reason for r in bounded)


def test_the_engine_stops_at_the_bound_when_the_estimate_missed(monkeypatch) -> None:  # noqa: ANN001
    """The backstop: KV preemptions can stall the queue behind one long recomputation, which no
    estimate from the lengths foresees (a heavy-tailed output mix ran 310 k steps on an estimate
    of 20 k); the engine counts the work it spends and stops at the bound with one line."""
    monkeypatch.setattr("costmodels.serving.simulate.MAX_ENGINE_WORK", 50)
    shape = serving_shape("Llama 3.1 8B", 640)
    requests = make_requests(100, mode="server", rate=2.0, prompt_len=512, output_len=128)
    with pytest.raises(EngineWorkError, match="was stopped: the engine passed 50 work units"):
        simulate_serving(shape, ServingLayout(1), cluster_of("H100 SXM"), requests, EngineConfig())


def test_each_disaggregated_pool_instance_is_bounded_too(monkeypatch, capsys) -> None:  # noqa: ANN001
    from commatlas.cli import main

    monkeypatch.setattr("costmodels.serving.disaggregated.MAX_ENGINE_WORK", 5)
    argv = ["predict-serving", "--model", "llama-3.1-8b", "--gpu", "h100", "--tp", "1",
            "--mode", "server", "--rate", "5", "--requests", "50", "--prompt-len", "256",
            "--output-len", "32", "--disaggregated"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "a pool instance's simulation was stopped: the engine passed 5 work units" in err
    assert len(err.strip().splitlines()) == 1
