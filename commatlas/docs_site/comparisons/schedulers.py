"""``generated/compare/schedulers.md``: the scheduling family, then one iteration per schedule.

The first table is the records' own properties. The second runs the iteration predictor
(``costmodels.dp.predict``) for every schedule it knows, on ResNet-50 and BERT-Large with their
measured H200 profiles (the batch and forward/backward split of the profile, as
``commatlas predict`` uses them), over the scenario's 8 nodes x 8 GPUs with ring all-reduce.
"""

from __future__ import annotations

from dataclasses import dataclass

from commatlas.docs_site import Files, scenario
from commatlas.docs_site.comparisons._common import (
    EMPTY,
    GUIDE_PAGES,
    NODES,
    cell,
    format_seconds,
    mark_fastest,
    ratio,
    record_link,
    scenario_note,
    table,
)
from costmodels.dp.predict import SCHEDULE_NAMES, Method, Prediction, predict
from costmodels.workloads import Workload, get_workload
from taxonomy import Record, Taxonomy

WORKLOADS = ("resnet50", "bert-large")
# Predictor schedule -> the record it models.
SCHEDULE_RECORDS = {
    "bsp": "bsp-ssgd",
    "wfbp": "wfbp",
    "fusion": "tensor-fusion",
    "mg-wfbp": "mg-wfbp",
    "bytescheduler": "bytescheduler",
    "local-sgd": "local-sgd",
}
APPROACHES = {  # category[1] of a scheduling record -> what it changes
    "overlap": "overlaps communication with computation",
    "priority": "orders transfers by priority",
    "tensor-fusion": "merges tensors into fewer messages",
}


@dataclass(frozen=True)
class ScheduleRow:
    """One schedule's predicted iteration for one workload."""

    schedule: str
    record_id: str | None
    prediction: Prediction
    speedup: float  # BSP's iteration time over this one
    fastest: bool = False


def scheduling_records(tax: Taxonomy) -> list[Record]:
    members = [r for r in tax.records.values() if r.category[0] == "scheduling"]
    return sorted(members, key=lambda r: (r.category[1:2], r.name.lower()))


def method(schedule: str) -> Method:
    """The predictor's method for a schedule: ring all-reduce, the scenario's local-SGD period."""
    return Method(schedule=schedule, local_sgd_period=scenario.LOCAL_STEPS)


def setup(workload_name: str) -> tuple[Workload, int, float]:
    """(workload, batch per GPU, single-GPU step seconds) from its measured H200 profile."""
    workload = get_workload(workload_name)
    profile = workload.profile("fp32")
    if profile is None:
        raise ValueError(f"{workload_name} has no measured profile")
    return workload, profile.batch_size, profile.fwd_s + profile.bwd_s


def schedule_rows(workload_name: str) -> list[ScheduleRow]:
    """Every predictor schedule for one workload on the scenario's cluster, fastest marked."""
    workload, batch, step = setup(workload_name)
    cluster = scenario.cluster(NODES)
    found = {s: predict(workload, batch, step, cluster, method(s)) for s in SCHEDULE_NAMES}
    bsp = found["bsp"].iteration_time_s
    best = min(p.iteration_time_s for p in found.values())
    return [
        ScheduleRow(
            s,
            SCHEDULE_RECORDS.get(s),
            found[s],
            bsp / found[s].iteration_time_s,
            found[s].iteration_time_s == best,
        )  # fmt: skip
        for s in SCHEDULE_NAMES
    ]


def _property_cells(record: Record, modelled: dict[str, str]) -> list[str]:
    props = record.properties
    approach = APPROACHES.get(record.category[1] if len(record.category) > 1 else "", "")
    return [
        record_link(record.id, record.name), cell(approach), cell(props.communicates),
        cell(props.collective), cell(props.typical_scale), cell(record.reference_impl is not None),
        f"`{modelled[record.id]}`" if record.id in modelled else EMPTY, cell(record.cost_model),
    ]  # fmt: skip


PROPERTY_HEADERS = [
    "Technique", "Approach", "What travels", "Collective", "Scale", "Code", "Predictor schedule",
    "Cost model",
]  # fmt: skip
RESULT_HEADERS = [
    "Schedule", "Technique", "Iteration", "Compute", "Communication", "Exposed communication",
    "Speed-up over BSP", "Scaling efficiency",
]  # fmt: skip


def _result_cells(row: ScheduleRow, tax: Taxonomy) -> list[str]:
    p = row.prediction
    record = tax.records.get(row.record_id or "")
    return [
        f"`{row.schedule}`", record_link(record.id, record.name) if record else EMPTY,
        mark_fastest(format_seconds(p.iteration_time_s), row.fastest), format_seconds(p.compute_s),
        format_seconds(p.communication_s), format_seconds(p.exposed_communication_s),
        ratio(row.speedup),
        f"{p.scaling_efficiency:.0%}",
    ]  # fmt: skip


def _workload_section(name: str, tax: Taxonomy) -> list[str]:
    workload, batch, step = setup(name)
    rows = schedule_rows(name)
    return [
        f"### {workload.name}",
        "",
        f"{batch} samples per GPU; measured H200 fp32 step {format_seconds(step)} on one GPU; "
        f"{len(workload.tensors)} gradient tensors, {workload.params / 1e6:.1f}M parameters.",
        "",
        *table(RESULT_HEADERS, (_result_cells(r, tax) for r in rows)),
        "",
    ]


def scheduler_page(tax: Taxonomy) -> Files:
    records = scheduling_records(tax)
    modelled = {record_id: s for s, record_id in SCHEDULE_RECORDS.items()}
    guide = "../" + GUIDE_PAGES["schedulers"].removeprefix("generated/")
    defaults = Method()
    lines = [
        "# Communication schedulers compared",
        "",
        f"The {len(records)} techniques of the scheduling family: they leave the bytes alone "
        "and change *when* they travel, overlapping them with backward, merging small tensors "
        "or ordering transfers so that the next forward can start sooner. The second part "
        "predicts one training iteration under every schedule the iteration predictor "
        f"simulates. The guide [overlapping communication]({guide}) explains the trade-offs.",
        "",
        "## The techniques",
        "",
        *table(PROPERTY_HEADERS, (_property_cells(r, modelled) for r in records)),
        "",
        "*Predictor schedule*: the schedule of `costmodels.schedules` that simulates the technique "
        "(the predictor also simulates BSP and local SGD, outside this family).",
        "",
        "## One iteration on 8 × 8 GPUs",
        "",
        *scenario_note(
            "Data-parallel training with ring all-reduce; the gradients become ready as the "
            "measured H200 backward produces them. Tensor fusion buckets up to "
            f"{defaults.fusion_threshold_bytes / 2**20:g} MiB, ByteScheduler partitions of "
            f"{defaults.partition_bytes / 2**20:g} MiB, local SGD averages every "
            f"{scenario.LOCAL_STEPS} steps (its time is per step, amortised, and it changes the "
            "algorithm). *Exposed communication*: the part not hidden behind compute."
        ),
    ]
    for name in WORKLOADS:
        lines += _workload_section(name, tax)
    return {"generated/compare/schedulers.md": "\n".join(lines)}
