"""``generated/compare/seven-methods.md``: the first survey's own experiment, predicted.

Shi et al.'s comparative study ran seven lossless methods for ResNet-50, BERT-Base and BERT-Large
on 1-32 GPUs; its figure plots their scaling efficiency. This page redraws that figure from the
project's models (costmodels.dp.validation_figure) with the measured points over the predicted
lines, the held-out error below, and the regret of the method the model would pick. Computed at
build time by the same code as ``commatlas validate-models``; nothing is typed in.
"""

from __future__ import annotations

from pathlib import Path

import vl_convert

from commatlas.docs_site import Files
from commatlas.docs_site.markdown import table
from commatlas.docs_site.validation_dp import DATA, held_out, validated
from costmodels.dp.validation_figure import figure_points, figure_spec
from costmodels.dp.validation_lodo import Regret, mape, regrets

PAGE = "generated/compare/seven-methods.md"
PLOT = "seven-methods.svg"


def seven_methods_page(tax: object = None, data: Path = DATA) -> Files:
    """The page and its figure (module docstring)."""
    _, checked, held_mape = validated(data)
    lodo = held_out(data)
    points = figure_points(checked, lodo)
    lines = [
        "# The first survey's experiment: seven lossless methods",
        "",
        "Shi et al. (*A Quantitative Survey of Communication Optimizations in Distributed Deep",
        "Learning*, IEEE Network 2021) ran BSP, WFBP and ByteScheduler over a parameter server",
        "(BytePS, servers on their own nodes) and over all-reduce (Horovod + NCCL), plus MG-WFBP,",
        "for ResNet-50, BERT-Base and BERT-Large on 1-32 GPUs (8 nodes x 4 RTX 2080 Ti, PCIe,",
        "10 Gbit/s Ethernet). Their figure plots each method's scaling efficiency; below is the",
        "same figure predicted by CommAtlas, with the measured means (dots, bars of two standard",
        "deviations) over the predicted lines, and under it the error of the prediction made",
        "with the model's own runs left out of every fit (leave one DNN out).",
        "",
        f"![Scaling efficiency of the seven methods, predicted and measured](plots/{PLOT})",
        "",
        f"- In-sample (links fitted on every model's BSP rows): MAPE **{held_mape:.1f}%** over "
        f"the non-BSP rows, {mape(checked):.1f}% over every row.",
        f"- Leave one DNN out (links, the single-node overlap and ByteScheduler's plugin cost "
        f"fitted on the two other models): MAPE **{mape(lodo):.1f}%** over every row of the "
        "model left out.",
        "",
        "How each run is priced, and which constants are fitted, is on the",
        "[data-parallel validation page](../validation.md); `commatlas validate-models` prints",
        "the same numbers.",
        "",
        "## Which method would the model pick?",
        "",
        "Per model and GPU count, the method predicted fastest and what choosing it costs",
        "against the measured best (regret = 1 - measured(pick) / measured(best); methods",
        "predicted alike count as the slower of them; \"noise\": the gap is within two standard",
        "deviations of the difference of the two runs' means).",
        "",
    ]
    rows = [[r.dnn, str(r.gpus), r.measured_best, r.predicted_best, _regret(r),
             h.predicted_best, _regret(h)]
            for r, h in zip(regrets(checked), regrets(lodo), strict=True)]  # fmt: skip
    lines += table(["Model", "GPUs", "Measured best", "Pick (in-sample)", "Regret",
                    "Pick (held out)", "Regret"], rows)  # fmt: skip
    lines += ["", *_caveats(points)]
    return {PAGE: "\n".join(lines), f"generated/compare/plots/{PLOT}":
            vl_convert.vegalite_to_svg(figure_spec(points))}  # fmt: skip


def _regret(r: Regret) -> str:
    return f"{100 * r.regret:.1f}%" + (" (noise)" if r.regret > 0 and r.within_noise else "")


def _caveats(points: list[dict]) -> list[str]:
    """The largest misses, with their sizes read from the points."""
    worst = sorted((p for p in points if p["gpus"] > 1),
                   key=lambda p: -abs(p["held_out_error_pct"]))[:4]  # fmt: skip
    lines = ["## Where it is off", "", "The largest held-out errors:", ""]
    lines += [f"- {p['method']}, {p['model']}, {p['gpus']} GPUs: "
              f"{p['held_out_error_pct']:+.0f}%" for p in worst]  # fmt: skip
    return [
        *lines,
        "",
        "ByteScheduler-A2A is the method the model knows least: its PyTorch plugin schedules",
        "from a Python thread (polling, per-parameter optimizer steps, forward locks), which the",
        "model prices as one fitted number of seconds per iteration for every model, while the",
        "ResNet-50 runs imply about three times what the BERT runs do. BytePS with WFBP is",
        "predicted 7-10% slow for BERT-Base on several nodes, which is where a pick misses.",
        "The 100 Gbit/s runs of the same study (RDMA and TCP/IP over InfiniBand) are not used",
        "here: they are kept for independent checks.",
        "",
    ]
