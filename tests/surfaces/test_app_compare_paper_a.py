"""Issue 43, item 4: the Compare page redraws the first survey's figure (seven methods, three
models) with the measured points, and lists the regret of the model's pick; closed by default."""

from __future__ import annotations

from pathlib import Path

from app_helpers import app_test

PAGE = str(Path(__file__).parents[2] / "app_pages" / "compare.py")


def test_the_survey_figure_is_drawn_on_demand() -> None:
    closed = app_test(PAGE)
    assert not closed.session_state["paper_a_show"]  # nothing computed until asked
    opened = app_test(PAGE, state={"paper_a_show": True})
    charts = [c for c in opened.get("vega_lite_chart")
              if "vconcat" in c.proto.spec]  # fmt: skip
    assert len(charts) == 1
    spec = charts[0].proto.spec
    for name in ("BSP-PS", "ByteScheduler-A2A", "MG-WFBP", "ResNet-50", "BERT-Large",
                 "held_out_error_pct"):  # fmt: skip
        assert name in spec
    (regret,) = [d.value for d in opened.dataframe if "regret" in d.value.columns]
    assert len(regret) == 12 and set(regret["GPUs"]) == {4, 8, 16, 32}
    assert any("leave one DNN out" in m.value for m in opened.markdown)
