"""The Serving capacity page bounds its work before it starts (issue 35): in-range inputs whose
plan the engine would take minutes over (131,072-token prompts, 3,000 requests) give the work
bound's one message instead of a page that keeps "running", and no simulation runs, so nothing
keeps burning a core after the tab closes."""

from __future__ import annotations

from pathlib import Path

from app_helpers import app_test, shown

from costmodels.limits import MAX_ENGINE_WORK

PAGE = str(Path(__file__).parents[2] / "app_pages" / "serving_plan.py")


def test_an_over_limit_plan_is_one_message_and_no_simulation(monkeypatch) -> None:  # noqa: ANN001
    def no_engine(*_args, **_kwargs):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("the page simulated although the work bound refuses the input")

    monkeypatch.setattr("costmodels.serving.plan.simulate_serving", no_engine)
    at = app_test(PAGE, timeout_s=60, cp_prompt="131072", cp_output="32768", cp_requests="3000",
                  cp_ttft="600000", cp_tpot="10000")
    errors = [shown(e.value) for e in at.error]
    assert len(errors) == 1 and "engine work units" in errors[0], errors
    assert f"at most {MAX_ENGINE_WORK:,}" in errors[0] and "--" not in errors[0]
    assert not at.dataframe
