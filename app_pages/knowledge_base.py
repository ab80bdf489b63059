"""Page: search and filter the knowledge base; each record with its summary, formula and citation.

Inputs (sidebar, all in the URL): a search query (``q``; ranked as ``commatlas search`` ranks),
level, category, lossless, which survey discusses it (``taxonomy.query.Filter``), executable
only, and the result page. Shows how many records match and a chart of them by level, a table of
all matches, and one card per record of the current page: summary, cost formula (st.latex of
``costmodels.get(id)``) when the record has one, first citation, and a link to its page on the
documentation site (``kb_compute.docs_url()``, override with COMMATLAS_DOCS_URL).
"""

from __future__ import annotations

import math

import altair as alt
import pandas as pd
import streamlit as st

from app_pages.kb_compute import (
    LEVEL_TITLES,
    categories,
    citation_text,
    did_you_mean,
    formula_latex,
    load_records,
    matching,
    record_link_text,
    survey_mentions,
)
from app_pages.query_inputs import (
    Field,
    boolean,
    choice,
    int_between,
    seed,
    show_problems,
    text,
    write_back,
)
from taxonomy.query import Filter
from taxonomy.schema import Record

ANY = "any"
LOSSLESS = {ANY: (None, False), "yes": (True, False), "no": (False, False), "n/a": (None, True)}
SURVEYS = {ANY: None, "A (Shi et al. 2021)": "A", "B (Liang et al. 2024)": "B"}
PER_PAGE = 15


def fields(category_names: list[str]) -> list[Field]:
    return [
        Field("q", "", text(200)),
        Field("kb_level", ANY, choice([ANY, *LEVEL_TITLES])),
        Field("kb_cat", ANY, choice([ANY, *category_names])),
        Field("kb_lossless", ANY, choice(list(LOSSLESS))),
        Field("kb_survey", ANY, choice(list(SURVEYS))),
        Field("kb_code", False, boolean),
        Field("page", 1, int_between(1, 10_000)),
    ]


def sidebar(category_names: list[str]) -> None:
    bar = st.sidebar
    bar.text_input("Search", key="q", help="words in the name, aliases, category or summary",
                   placeholder="e.g. top-k, all-reduce tree")  # fmt: skip
    bar.selectbox(
        "Level", [ANY, *LEVEL_TITLES], key="kb_level",
        format_func=lambda v: v if v == ANY else f"{v} ({LEVEL_TITLES[v]})",
    )  # fmt: skip
    bar.selectbox("Category", [ANY, *category_names], key="kb_cat")
    bar.selectbox("Lossless", list(LOSSLESS), key="kb_lossless", help="n/a: hardware, studies")
    bar.selectbox(
        "Discussed by survey", list(SURVEYS), key="kb_survey",
        help="only records the survey is confirmed to discuss",
    )  # fmt: skip
    bar.checkbox("With a cost model or reference code only", key="kb_code")


def criteria() -> Filter:
    state = st.session_state
    lossless, lossless_na = LOSSLESS[state["kb_lossless"]]
    return Filter(
        level=None if state["kb_level"] == ANY else state["kb_level"],
        category=None if state["kb_cat"] == ANY else state["kb_cat"],
        lossless=lossless,
        lossless_na=lossless_na,
        survey=SURVEYS[state["kb_survey"]],
        executable=True if state["kb_code"] else None,
    )


def table(records: list[Record]) -> pd.DataFrame:
    lossless = {True: "yes", False: "no", None: "n/a"}
    return pd.DataFrame(
        {
            "id": [r.id for r in records],
            "name": [r.name for r in records],
            "level": [r.level for r in records],
            "category": [" > ".join(r.category) for r in records],
            "lossless": [lossless[r.lossless] for r in records],
            "cost model": [r.cost_model or "" for r in records],
            "reference code": [bool(r.reference_impl) for r in records],
        }
    )


def chart(frame: pd.DataFrame) -> alt.Chart:
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            y=alt.Y("level:N", title=None, sort=list(LEVEL_TITLES)),
            x=alt.X("count():Q", title="matching records", axis=alt.Axis(tickMinStep=1)),
            color=alt.Color("lossless:N", sort=["yes", "no", "n/a"]),
            tooltip=["level", "lossless", "count()"],
        )
        .properties(height=140)
    )


def card(record: Record) -> None:
    with st.container(border=True):
        st.markdown(f"#### {record.name}")
        st.caption(
            f"`{record.id}` · {record.level} · {' > '.join(record.category)} · lossless: "
            f"{ {True: 'yes', False: 'no', None: 'n/a'}[record.lossless] } · surveys: "
            f"{survey_mentions(record)}"
        )
        st.markdown(record.summary)
        if record.cost_model:
            latex, source = formula_latex(record.cost_model)
            st.latex(latex)
            st.caption(f"Cost model `{record.cost_model}` after {source}")
        st.markdown("First citation: " + citation_text(record.citations[0]))
        st.markdown(record_link_text(record.id))


def main() -> None:
    st.title("Knowledge base")
    records = load_records()
    names = categories(records)
    field_list = fields(names)
    problems = seed(field_list, __file__)
    sidebar(names)
    found = matching(records, st.session_state["q"], criteria())
    pages = max(1, math.ceil(len(found) / PER_PAGE))
    st.session_state["page"] = min(int(st.session_state["page"]), pages)
    st.sidebar.number_input(f"Result page (of {pages})", 1, pages, step=1, key="page")
    write_back(field_list)
    show_problems(problems)
    st.markdown(f"**{len(found)} of {len(records)} records** match.")
    if not found:
        close = did_you_mean(records, st.session_state["q"])
        hint = f" Did you mean {close}?" if close else ""
        st.info(f"No record matches: remove a filter or a search word.{hint}")
        return
    frame = table(found)
    st.altair_chart(chart(frame), width="stretch")
    st.dataframe(frame, hide_index=True, width="stretch", height=min(260, 35 * len(frame) + 38))
    page = int(st.session_state["page"])
    shown = found[(page - 1) * PER_PAGE : page * PER_PAGE]
    st.subheader(f"Records {(page - 1) * PER_PAGE + 1}-{(page - 1) * PER_PAGE + len(shown)}")
    for record in shown:
        card(record)


main()
