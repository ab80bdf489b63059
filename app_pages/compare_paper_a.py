"""The Compare page's section on the first survey's own experiment (issue 43).

Shi et al. (IEEE Network 2021) measured seven lossless methods (BSP, WFBP and ByteScheduler over a
parameter server and over all-reduce, and MG-WFBP) for ResNet-50, BERT-Base and BERT-Large on
1-32 GPUs over 10 Gbit/s Ethernet. This section redraws their scaling-efficiency figure from the
project's models with the measured points over the predicted lines and the held-out error below
(costmodels.dp.validation_figure), and lists the regret of the method the model would pick at
each GPU count. The numbers are ``commatlas validate-models``'s; they are computed once per
server (a few seconds: the validation and three leave-one-DNN-out fits), only when opened.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

DATA = Path(__file__).resolve().parents[1] / "costmodels" / "data" / "paper-a-measured-10gbe.csv"


@st.cache_resource(show_spinner="Predicting the survey's 84 measured runs ...")
def _validated() -> tuple:
    from costmodels.dp.validation import read_rows, validate
    from costmodels.dp.validation_lodo import leave_one_dnn_out

    rows = read_rows(DATA)
    _, checked, held_mape = validate(rows)
    return checked, leave_one_dnn_out(rows), held_mape


def show_paper_a() -> None:
    """The section: opened on demand (its first computation takes seconds)."""
    with st.expander("The first survey's experiment: seven methods, predicted and measured"):
        st.caption("Shi et al. (IEEE Network 2021), 8 nodes x 4 RTX 2080 Ti over 10 Gbit/s "
                   "Ethernet; data from HKBU-HPML/ddl-benchmarks. Independent of the sidebar.")
        if not st.toggle("Show the figure", key="paper_a_show"):
            return
        from costmodels.dp.validation_figure import figure_points, figure_spec
        from costmodels.dp.validation_lodo import mape, regrets

        checked, held_out, held_mape = _validated()
        st.vega_lite_chart(figure_spec(figure_points(checked, held_out), width=200, height=170))
        st.markdown(
            f"Lines: predicted; dots: measured (bars: two standard deviations); lower row: error "
            f"of the prediction with that model left out of every fit. MAPE in-sample "
            f"**{held_mape:.1f}%** (non-BSP rows), leave one DNN out **{mape(held_out):.1f}%** "
            f"(every row)."
        )
        st.dataframe(
            [{"model": r.dnn, "GPUs": r.gpus, "measured best": r.measured_best,
              "predicted best (held out)": h.predicted_best,
              "regret": f"{100 * h.regret:.1f}%", "within the runs' noise": h.within_noise}
             for r, h in zip(regrets(checked), regrets(held_out), strict=True)],
            hide_index=True,
        )  # fmt: skip
        st.caption("Regret: 1 - measured throughput of the pick / that of the measured best.")
