"""Guide: BSP, WFBP, tensor fusion, MG-WFBP and ByteScheduler against each other.

Every prediction is ``costmodels.dp.predict.predict`` (the measured H200 step and gradient ready
times of each workload) with ring all-reduce on ``_common.cluster``. The per-message time is
passed as ``comm``: ring all-reduce is affine in the message size, so two evaluations of
``message_seconds`` give it exactly, and MG-WFBP's dynamic programme over hundreds of tensors
does not re-enter sympy a hundred thousand times (the tests hold it equal to the plain call).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import altair as alt
import pandas as pd

from commatlas.docs_site import Files, scenario
from commatlas.docs_site.guides import _common as c
from costmodels.dp.predict import Method, Prediction, message_seconds, predict
from costmodels.hardware import get_link
from costmodels.workloads import get_workload
from taxonomy import Taxonomy

WORKLOADS = ("resnet50", "bert-large")
NETWORKS = ("10gbe", "hdr")
NODES = (1, 2, 4, 8, 16)
SCHEDULES = ("bsp", "wfbp", "fusion", "mg-wfbp", "bytescheduler")
LABEL = {"bsp": "BSP", "wfbp": "WFBP", "fusion": "fusion", "mg-wfbp": "MG-WFBP",
         "bytescheduler": "ByteScheduler"}  # fmt: skip
RECORD = {"bsp": "bsp-ssgd", "wfbp": "wfbp", "fusion": "tensor-fusion", "mg-wfbp": "mg-wfbp",
          "bytescheduler": "bytescheduler"}  # fmt: skip


def affine_comm(method: Method, network: str, nodes: int) -> Callable[[float], float]:
    """message_seconds as intercept + slope * bytes (exact for ring all-reduce)."""
    cluster = c.cluster(network, nodes)
    one, two = (message_seconds(method, cluster, n) for n in (1e6, 2e6))
    slope = (two - one) / 1e6
    return lambda nbytes: 0.0 if nbytes <= 0 or cluster.p == 1 else one + slope * (nbytes - 1e6)


@dataclass(frozen=True)
class Case:
    workload: str
    network: str
    nodes: int

    @property
    def gpus(self) -> int:
        return self.nodes * scenario.GPUS_PER_NODE


def step(workload: str) -> tuple[int, float, float]:
    """(batch per GPU, step seconds, backward seconds) of the measured H200 fp32 profile."""
    profile = get_workload(workload).profile("fp32")
    return profile.batch_size, profile.fwd_s + profile.bwd_s, profile.bwd_s


@cache
def prediction(case: Case, schedule: str) -> Prediction:
    batch, seconds, _ = step(case.workload)
    method = Method("allreduce", schedule, "ring")
    return predict(get_workload(case.workload), batch, seconds, c.cluster(case.network, case.nodes),
                   method, comm=affine_comm(method, case.network, case.nodes))  # fmt: skip


def cases() -> list[Case]:
    return [Case(w, n, k) for w in WORKLOADS for n in NETWORKS for k in NODES]


def comm_ratio(case: Case) -> float:
    """One all-reduce of the whole gradient over the backward pass (the overlap window)."""
    workload = get_workload(case.workload)
    cluster = c.cluster(case.network, case.nodes)
    whole = message_seconds(Method(collective="ring"), cluster, workload.params * 4.0)
    return whole / step(case.workload)[2]


def best(case: Case) -> str:
    return fastest(case)[0]


def fastest(case: Case) -> tuple[str, ...]:
    """Schedules with the shortest iteration (equal within rounding), in SCHEDULES order."""
    low = min(prediction(case, s).iteration_time_s for s in SCHEDULES)
    return tuple(s for s in SCHEDULES if prediction(case, s).iteration_time_s <= low * (1 + 1e-9))


def table_rows(workload: str) -> list[list[str]]:
    out = []
    for case in (x for x in cases() if x.workload == workload):
        top = prediction(case, best(case))
        out.append([get_link(case.network).name, str(case.gpus), f"{comm_ratio(case):.2f}",
                    *(c.format_ms(prediction(case, s).iteration_time_s) for s in SCHEDULES),
                    " = ".join(LABEL[s] for s in fastest(case)), f"{top.scaling_efficiency:.2f}",
                    c.format_ms(top.exposed_communication_s)])  # fmt: skip
    return out


def chart_svg() -> str:
    rows = [{"model": get_workload(x.workload).name, "network": get_link(x.network).name,
             "GPUs": x.gpus, "schedule": LABEL[s],
             "efficiency": prediction(x, s).scaling_efficiency}
            for x in cases() for s in SCHEDULES]  # fmt: skip
    chart = (
        alt.Chart(pd.DataFrame(rows))
        .mark_line(point=True)
        .encode(alt.X("GPUs:Q", scale=alt.Scale(type="log", base=2)),
                alt.Y("efficiency:Q", title="scaling efficiency", scale=alt.Scale(domain=[0, 1])),
                alt.Color("schedule:N", sort=[LABEL[s] for s in SCHEDULES]))
        .properties(width=220, height=150)
        .facet(row=alt.Row("model:N", title=None), column=alt.Column("network:N", title=None))
    )  # fmt: skip
    return c.chart_svg(chart)


def facts() -> dict[str, object]:
    """Numbers the prose states, computed over all cases (the tests re-check each)."""
    multi = [x for x in cases() if x.nodes > 1]
    fast = [x for x in multi if comm_ratio(x) < 1]
    slow = [x for x in multi if comm_ratio(x) >= 1]

    def t(x: Case, s: str) -> float:
        return prediction(x, s).iteration_time_s

    def eff(xs: list[Case], s: str | None = None) -> list[float]:
        return [prediction(x, s or best(x)).scaling_efficiency for x in xs]

    return {
        "tensors": {w: len(get_workload(w).tensors) for w in WORKLOADS},
        "wfbp_slower": sum(t(x, "wfbp") > t(x, "bsp") for x in multi),
        "multi": len(multi),
        "mg_le_wfbp": all(t(x, "mg-wfbp") <= t(x, "wfbp") * (1 + 1e-9) for x in cases()),
        "mg_le_bsp": all(t(x, "mg-wfbp") <= t(x, "bsp") * (1 + 1e-9) for x in cases()),
        "mg_best": sum("mg-wfbp" in fastest(x) for x in cases()),
        "mg_gap": max(t(x, "mg-wfbp") / t(x, best(x)) - 1 for x in cases()),
        "fast_ratio": (min(map(comm_ratio, fast)), max(map(comm_ratio, fast))),
        "slow_ratio": (min(map(comm_ratio, slow)), max(map(comm_ratio, slow))),
        "fast_best": (min(eff(fast)), max(eff(fast))),
        "fast_bsp": (min(eff(fast, "bsp")), max(eff(fast, "bsp"))),
        "slow_best": max(eff(slow)),
        "slow_gain": max((t(x, "bsp") - t(x, best(x))) / t(x, "bsp") for x in slow),
        "n_fast": len(fast),
        "n_slow": len(slow),
    }


def page_text(tax: Taxonomy) -> str:
    f = facts()
    tensors = " and ".join(f"{get_workload(w).name}'s {n}" for w, n in f["tensors"].items())
    records = ", ".join(c.record_link(tax, RECORD[s], LABEL[s]) for s in SCHEDULES)
    header = ["network", "GPUs", "comm/backward", *(f"{LABEL[s]} (ms)" for s in SCHEDULES),
              "fastest", "its efficiency", "its exposed comm (ms)"]  # fmt: skip
    out = [
        "# Scheduling communication against the backward pass", "",
        "**The question.** Data-parallel training must all-reduce every gradient each "
        "iteration. Waiting for the whole backward pass and sending one message (BSP), sending "
        "each tensor as soon as it is ready (WFBP), bucketing tensors (tensor fusion), merging "
        "them by an optimal plan (MG-WFBP) or partitioning and prioritising them (ByteScheduler) "
        "hide different amounts of that communication behind compute. Which one wins, by how "
        "much, and when does overlapping help at all?", "",
        f"**Values used.** The five schedules ({records}) with ring all-reduce, predicted by "
        "`costmodels.dp.predict` from the measured H200 fp32 step and gradient ready times of "
        "ResNet-50 (batch 64) and BERT-Large (batch 32); nodes of "
        f"{scenario.GPUS_PER_NODE} GPUs on NVLink 4 "
        f"({c.format_bandwidth(c.achievable_Bps(scenario.INTRA_LINK))}) and "
        f"{' or '.join(c.link_label(n) for n in NETWORKS)} between nodes, as in the site's "
        f"[reference scenario]({c.SCENARIO_PAGE}) but with the reduction left free, as "
        "`commatlas predict` does. Fusion buckets 64 MiB, ByteScheduler partitions 4 MiB "
        "(`costmodels.dp.predict.Method` defaults). One node means NVLink only, the same on both "
        "networks. comm/backward is one all-reduce of the whole gradient over the backward "
        "pass: the overlap window it has to fit in.", "",
    ]  # fmt: skip
    for w in WORKLOADS:
        out += [f"## {get_workload(w).name}", "", *c.table(header, table_rows(w))]
    out += [
        "![Scaling efficiency of the five schedules against the number of GPUs]"
        "(plots/scheduling-efficiency.svg)", "",
        "*Scaling efficiency = single-GPU step / predicted iteration.*", "",
        "## When overlap helps", "",
        f"- **Communication shorter than the backward pass** (comm/backward "
        f"{f['fast_ratio'][0]:.2f}–{f['fast_ratio'][1]:.2f}, the {f['n_fast']} multi-node HDR "
        f"cases): the fastest schedule keeps {f['fast_best'][0]:.0%}–{f['fast_best'][1]:.0%} "
        f"scaling efficiency where BSP drops to {f['fast_bsp'][0]:.0%}–{f['fast_bsp'][1]:.0%}; "
        "nearly all of the communication hides behind backward.",
        f"- **Communication several times the backward pass** (comm/backward "
        f"{f['slow_ratio'][0]:.1f}–{f['slow_ratio'][1]:.1f}, the {f['n_slow']} multi-node "
        f"10 GbE cases): no schedule exceeds {f['slow_best']:.0%} efficiency and the best "
        f"gains at most {f['slow_gain']:.0%} over BSP. Overlap can hide no more than the compute "
        "time, which is small next to the communication; what helps there is sending fewer "
        "bytes (see [when compression pays](compression-pays.md)).",
        f"- **Per-tensor messages cost start-ups**: WFBP is slower than BSP in "
        f"{f['wfbp_slower']} of the {f['multi']} multi-node cases, since each of {tensors} "
        "tensors pays its own 2(p − 1) ring start-ups; ByteScheduler's partitions pay them "
        "too. Fusion and MG-WFBP merge tensors into fewer messages.",
        f"- **MG-WFBP** is the fastest (or tied) in {f['mg_best']} of {len(cases())} cases and "
        + ("never slower than WFBP or BSP" if f["mg_le_wfbp"] and f["mg_le_bsp"] else
           "not always ahead of WFBP and BSP")
        + ": its optimal plan over contiguous merges contains both extremes, one message per "
        "tensor and one message for all.", "",
        *c.reproduce(reproduce_lines()),
    ]  # fmt: skip
    return "\n".join(out)


def reproduce_lines() -> list[str]:
    x = Case("resnet50", "hdr", 8)
    row = prediction(x, "mg-wfbp")
    return [
        "- The whole ResNet-50 HDR table (and more methods): `commatlas compare --workload "
        f"resnet50 --batch-size 64 {c.predict_flags('hdr')} --node-counts "
        f"{' '.join(map(str, NODES))}`.",
        f"- One cell: `commatlas predict --workload resnet50 --batch-size 64 "
        f"{c.predict_flags('hdr', x.nodes)} --schedule mg-wfbp --collective ring --json` gives "
        f"`iteration_time_s` {row.iteration_time_s:.6g} and `exposed_communication_s` "
        f"{row.exposed_communication_s:.6g}.",
        "- The Compare page of the [calculator](../../calculator.md) draws the same curves with "
        "a Gantt chart of one schedule; the [schedulers comparison](../compare/schedulers.md) "
        "and the [validation page](../validation.md) (these models against Shi et al.'s "
        "measured 10 GbE runs) show how far to trust them.",
    ]  # fmt: skip


def files(tax: Taxonomy) -> Files:
    return {
        "generated/guides/scheduling-overlap.md": page_text(tax),
        "generated/guides/plots/scheduling-efficiency.svg": chart_svg(),
    }
