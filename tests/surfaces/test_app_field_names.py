"""Every calculator page's errors name the page's own field, not a CLI flag (issue 42, item 2:
"Messages on every page name the field to change").

app_pages/field_names.py turns a model's "--tp 3 does not divide the 64 heads" into the page's
"Tensor parallel (TP) 3 does not divide the 64 heads"; each page keeps one flag -> label map.
These tests provoke one bad input per page and read the message as rendered, and check that
every label a map promises is a widget the page really draws.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from app_helpers import app_test, assert_message, shown

from app_pages.field_names import name_fields

ROOT = str(Path(__file__).parents[2] / "app_pages") + "/"
run = partial(app_test, timeout_s=180)


def test_flags_become_labels_and_unknown_flags_lose_their_dashes() -> None:
    labels = {"--tp": "Tensor parallel (TP)", "--prompt-len": "Prompt tokens",
              "tp x pp x cp": "TP x PP x CP"}  # fmt: skip
    text = "--tp 3 does not divide\n  --heads 64; --prompt-len + --output-len; tp x pp x cp = 8"
    assert name_fields(text, labels) == (
        "Tensor parallel (TP) 3 does not divide heads 64; Prompt tokens + output-len; "
        "TP x PP x CP = 8"
    )
    # a longer flag is not eaten by a shorter one, and words with dashes inside stay
    assert name_fields("--tp-across-nodes needs --tp; a non--tp word", labels) == (
        "tp-across-nodes needs Tensor parallel (TP); a non--tp word"
    )
    # a label with a backslash (or what a regex reads as a group) is inserted verbatim
    assert name_fields("cp here", {"cp": r"C\1P"}) == r"C\1P here"


def _messages(at, kind: str = "error") -> list[str]:
    return [shown(m.value) for m in getattr(at, kind)]


@pytest.mark.parametrize(
    ("page", "query", "words"),
    [
        ("serving", {"sv_tp": "3"}, "Tensor parallel (TP) 3 does not divide the 64 heads"),
        ("serving", {"sv_gpu": "V100 SXM2", "sv_prec": "fp8"}, "Weights 'fp8' needs fp8"),
        ("goodput", {"gp_wi_gpus": "1000"}, "multiple of TP x PP x CP = 72"),
        ("goodput", {"gp_wi_storage": "abc"}, "What if → Storage bandwidths: cannot read 'abc'"),
        ("llm_planner", {"mstep": "1", "mlayout": "tp=3,pp=1,dp=2,mb=1"},
         "Measured on layout tp 3 does not divide the model's heads 32"),
        ("collectives", {"lo": "1 GB", "hi": "1 KB"}, "Smallest message and Largest message"),
    ],
)
def test_a_bad_input_names_the_field(page: str, query: dict[str, str], words: str) -> None:
    at = run(ROOT + page + ".py", **query)
    assert_message(at, "error", words)
    assert not any("--" in m for m in _messages(at)), _messages(at)


def test_no_layout_names_the_search_fields() -> None:
    at = run(ROOT + "llm_planner.py", nodes="1", gpus="3", cp="2")
    assert_message(at, "error", "no context-parallel degree (Context-parallel degrees 2) divides "
                   "GPUs (Nodes x GPUs per node) 3")  # fmt: skip
    assert_message(at, "error", "Change Nodes or GPUs per node, Global batch (sequences)")


def _widget_labels(at) -> set[str]:
    kinds = ("selectbox", "number_input", "text_input", "multiselect", "checkbox", "text_area",
             "radio", "select_slider", "toggle")  # fmt: skip
    return {w.label for kind in kinds for w in getattr(at, kind)}


CUSTOM = "Custom bandwidth / latency"  # app_pages.network_inputs.CUSTOM: draws the latency box


@pytest.mark.parametrize(
    ("page", "module", "runs"),
    [
        ("serving", "app_pages.serving", [({"sv_disagg": "True"}, {})]),
        ("serving_plan", "app_pages.serving_plan_compute", [({}, {})]),
        ("goodput", "app_pages.goodput", [({}, {})]),
        ("llm_planner", "app_pages.llm_inputs", [({"mstep": "1"}, {})]),
        ("compare", "app_pages.compare_inputs",
         [({}, {}), ({"intra": CUSTOM, "inter": CUSTOM}, {"b_arch": "ps"})]),
    ],
)
def test_every_label_in_a_map_is_a_field_of_its_page(page: str, module: str, runs: list) -> None:
    """A map's label is a widget the page draws (in one of ``runs``: query, session state)."""
    import importlib

    labels = importlib.import_module(module).LABELS
    drawn = set().union(*(_widget_labels(run(ROOT + page + ".py", state=state, **query))
                          for query, state in runs))  # fmt: skip
    promised = {label.split(" → ")[-1] for flag, label in labels.items()
                if flag.startswith("--") and not label.startswith("the model's")}  # fmt: skip
    assert promised <= drawn, sorted(promised - drawn)
