"""``generated/compare/compressors.md``: the compression family, by sub-category, then priced.

Property columns come from the records (and, for the collective, from the reference
implementation's declared ``communication``). For records with a cost model the page adds, at
the scenario with p = 64: the compression ratio as the bytes one rank sends in the dense ring
all-reduce of the same tensor over the bytes it sends under the compressor's model, and the
exchange time as ``costmodels.dp.compression_exchange`` defines it: the model's communication with
gamma_c = 0 plus the H200-measured kernel time (t0 + c bytes) of ``costmodels.dp.compression_cost``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import altair as alt
import sympy as sp

import costmodels
from commatlas.docs_site import Files, charts, scenario
from commatlas.docs_site.comparisons._common import (
    EMPTY,
    FASTEST,
    GUIDE_PAGES,
    P,
    cell,
    format_bytes,
    format_seconds,
    ratio,
    record_link,
    scenario_note,
    table,
)
from costmodels.dp.compression_breakeven import dense_bytes_expr
from costmodels.dp.compression_cost import KERNEL_OF, compute_cost
from costmodels.symbols import key_of
from taxonomy import Record, Taxonomy

GROUPS = {
    "quantization": "Quantization",
    "sparsification": "Sparsification",
    "low-rank": "Low-rank",
    "hybrid": "Hybrid",
    "error-feedback": "Error feedback",
    "systems": "Compression systems",
    "llm-parallelism": "Compression for large-model parallelism",
}
OTHER = "other-families"  # compressing records whose home is another family
SLOWEST = "(slowest)"
KNOBS = ("b", "k", "r")  # bits per element, kept elements, rank: what the scenario sets
PLOT = "generated/compare/plots/compressors-exchange.svg"


@dataclass(frozen=True)
class Computed:
    """A compressor's cost model at the scenario (p = P, the 100 MB fp32 gradient)."""

    variant: str
    knobs: str  # the scenario values of the model's own knobs (b, k, r), as text
    dense_bytes: float  # the fp32 tensor (d w_v, or rows cols w_v for matrix-shaped methods)
    dense_wire_bytes: float  # bytes one rank sends in the dense ring all-reduce of it
    wire_bytes: float  # bytes one rank sends under the compressor's model
    kernel: str | None  # the profiled H200 kernel standing for its compress step
    compute_s: float | None  # that kernel on dense_bytes
    communication_s: float  # the model with gamma_c = 0
    dense_s: float  # the dense ring all-reduce of dense_bytes

    @property
    def ratio(self) -> float:
        return self.dense_wire_bytes / self.wire_bytes

    @property
    def total_s(self) -> float:
        return self.communication_s + (self.compute_s or 0.0)

    @property
    def speedup(self) -> float:
        return self.dense_s / self.total_s


@dataclass(frozen=True)
class CompressorRow:
    record: Record
    group: str
    code_communication: str | None  # allreduce / allgather / custom, from reference_impls
    computed: Computed | None


def in_compression_family(record: Record) -> bool:
    kind = record.properties.compression
    return record.category[0] == "compression" or (kind is not None and kind != "none")


def group_of(record: Record) -> str:
    if record.category[0] == "compression" and len(record.category) > 1:
        return record.category[1]
    return OTHER


def _value(expr: sp.Expr, values: dict[str, Any]) -> float:
    return float(expr.subs({s: float(values[key_of(s)]) for s in expr.free_symbols}))


def computed(record: Record) -> Computed | None:
    """The record's cost model (default variant) at the scenario; None without a model."""
    if not record.cost_model:
        return None
    model = costmodels.get(record.cost_model)
    variant = model.default_variant
    values = scenario.symbol_values(model.id, P, scenario.MESSAGE_BYTES, record.properties.bits)
    dense = _value(dense_bytes_expr(model.id), values)
    ring = costmodels.get("ring-allreduce")
    dense_values = {**values, "n": dense}
    kernel = KERNEL_OF.get(model.id)
    used = {key_of(x) for x in model.variant(variant).time.free_symbols}
    knobs = ", ".join(f"{key} = {float(values[key]):,.0f}" for key in KNOBS if key in used)
    return Computed(
        variant=variant,
        knobs=knobs,
        dense_bytes=dense,
        dense_wire_bytes=float(ring.evaluate_volume(None, "rank", **dense_values)),
        wire_bytes=float(model.evaluate_volume(variant, None, **values)),
        kernel=kernel,
        compute_s=float(compute_cost(kernel, dense)) if kernel else None,
        communication_s=float(model.evaluate(variant, **{**values, "gamma_c": 0.0})),
        dense_s=float(ring.evaluate(**dense_values)),
    )


@cache
def _code_communications() -> dict[str, str]:
    """Record id -> the ``communication`` its reference compressor declares."""
    from reference_impls.compression import factories, get

    found = {}
    for record_id, factory in factories().items():
        declared = getattr(factory, "communication", None)  # a class attribute, when fixed
        if isinstance(declared, str):
            found[record_id] = declared
            continue
        # Set per instance (e.g. random-k by its shared_seed default): build one, at the
        # scenario's density where the constructor needs one.
        for config in ({}, {"ratio": scenario.DENSITY}):
            try:
                found[record_id] = get(record_id, **config).communication
                break
            except (TypeError, ValueError):
                continue
    return found


def compressor_rows(tax: Taxonomy) -> list[CompressorRow]:
    """Every record of the compression family, in group order, then by name."""
    members = [r for r in tax.records.values() if in_compression_family(r)]
    order = [*GROUPS, *sorted({group_of(r) for r in members} - set(GROUPS) - {OTHER}), OTHER]
    members.sort(key=lambda r: (order.index(group_of(r)), r.name.lower()))
    code = _code_communications()
    return [CompressorRow(r, group_of(r), code.get(r.id), computed(r)) for r in members]


def _collective(row: CompressorRow) -> str:
    parts = [row.record.properties.collective] if row.record.properties.collective else []
    if row.code_communication:
        parts.append(f"code: `{row.code_communication}`")
    return cell("; ".join(parts))


def _bits(record: Record) -> str:
    bits = record.properties.bits
    return EMPTY if bits is None else f"{bits:g}"


GROUP_HEADERS = [
    "Technique", "Kind", "Bits", "Ratio (record)", "Unbiased", "Error feedback",
    "Collective (record; code)", "Lossless", "Code", f"Ratio at p = {P}",
    f"Exchange at p = {P} (speed-up)",
]  # fmt: skip


def _group_cells(row: CompressorRow) -> list[str]:
    r, c = row.record, row.computed
    return [
        record_link(r.id, r.name), cell(r.properties.compression), _bits(r),
        cell(r.properties.compression_ratio), cell(r.properties.unbiased),
        cell(r.properties.needs_error_feedback), _collective(row), cell(r.lossless),
        cell(r.reference_impl is not None), EMPTY if c is None else ratio(c.ratio),
        EMPTY if c is None else f"{format_seconds(c.total_s)} (×{c.speedup:.3g})",
    ]  # fmt: skip


SUMMARY_HEADERS = [
    "Technique", "Variant", "Priced with", "Bytes per rank", "Dense ring bytes", "Ratio",
    "H200 kernel", "Compute", "Communication", "Exchange", "Dense ring", "Speed-up",
]  # fmt: skip


def _summary(rows: list[CompressorRow]) -> list[str]:
    priced = sorted((r for r in rows if r.computed), key=lambda r: r.computed.total_s)
    lines = []
    for i, row in enumerate(priced):
        c = row.computed
        mark = FASTEST if i == 0 else SLOWEST if i == len(priced) - 1 else ""
        exchange = f"**{format_seconds(c.total_s)}** {mark}" if mark else format_seconds(c.total_s)
        lines.append([
            record_link(row.record.id, row.record.name), f"`{c.variant}`", cell(c.knobs),
            format_bytes(c.wire_bytes),
            format_bytes(c.dense_wire_bytes), ratio(c.ratio),
            f"`{c.kernel}`" if c.kernel else EMPTY,
            EMPTY if c.compute_s is None else format_seconds(c.compute_s),
            format_seconds(c.communication_s),
            exchange, format_seconds(c.dense_s), f"×{c.speedup:.3g}",
        ])  # fmt: skip
    return table(SUMMARY_HEADERS, lines)


def _short(record: Record) -> str:
    return record.name.split(" (")[0].split(" / ")[0]


def _chart(rows: list[CompressorRow]) -> str:
    data = []
    for row in rows:
        if row.computed:
            c = row.computed
            for part, value in (("communication", c.communication_s), ("compute", c.compute_s)):
                data.append(
                    {"technique": _short(row.record), "part": part, "ms": 1e3 * (value or 0)}
                )
    dense = next(r.computed.dense_s for r in rows if r.record.id == "topk-sparsification")
    bars = (
        alt.Chart(alt.Data(values=data))
        .mark_bar()
        .encode(
            y=alt.Y("technique:N", sort="x", title=None),
            x=alt.X("sum(ms):Q", title=f"exchange of the {format_bytes(scenario.MESSAGE_BYTES)} "
                    f"gradient at p = {P} (ms)"),
            color=alt.Color("part:N"),
        )
    )  # fmt: skip
    rule = (
        alt.Chart(alt.Data(values=[{"ms": 1e3 * dense}]))
        .mark_rule(strokeDash=[4, 3], color="black")
        .encode(x="ms:Q")
    )
    return charts.svg(charts.style(alt.layer(bars, rule), width=420, height=300))


def compressor_page(tax: Taxonomy) -> Files:
    rows = compressor_rows(tax)
    guide = "../" + GUIDE_PAGES["compressors"].removeprefix("generated/")
    lines = [
        "# Gradient compressors compared",
        "",
        f"All {len(rows)} techniques of the compression family (the records filed under "
        "compression, and those elsewhere that compress what they send), by sub-category. "
        "Property columns are the records' own; *code* is the `communication` the reference "
        "implementation declares (`allreduce`: payloads are summed; `allgather`: gathered and "
        "decoded one by one; `custom`: its own message pattern). Where a record has a cost model "
        f"the last two columns price it; when compression pays off is the subject of the guide "
        f"[when compression pays]({guide}).",
        "",
        *scenario_note(
            f"The gradient is n = {format_bytes(scenario.MESSAGE_BYTES)} of fp32 "
            f"(d = {scenario.MESSAGE_BYTES / 4 / 1e6:g}M elements); sparsifiers keep k = "
            f"{scenario.DENSITY:.0%} of d, quantizers send the record's bits "
            f"({scenario.DEFAULT_BITS} where it has none), PowerSGD rank "
            f"{scenario.POWERSGD_RANK}. *Ratio at p = {P}*: bytes one rank sends in the dense "
            "ring all-reduce of the tensor over the bytes it sends under the compressor's model "
            "(an all-gather of p - 1 payloads gives back much of the per-element saving). "
            "*Exchange*: the model's communication plus the H200-measured compress kernel "
            "(a fit t0 + c bytes to `costmodels/data/h200_profile.json`); the speed-up is over "
            "the dense ring all-reduce of the same tensor."
        ),
    ]
    order = list(dict.fromkeys(r.group for r in rows))
    for group in order:
        members = [r for r in rows if r.group == group]
        title = GROUPS.get(group, "Compression in other families" if group == OTHER else group)
        lines += [f"## {title}", ""]
        if group == OTHER:
            lines += [
                "Records of other families whose `compression` property is not *none*.",
                "",
            ]
        lines += [*table(GROUP_HEADERS, (_group_cells(r) for r in members)), ""]
    lines += [
        "## Priced at the scenario",
        "",
        "Every compressor with a cost model, fastest exchange first (each model's default "
        "variant). *H200 kernel*: the profiled kernel that stands for the compress step "
        "(a proxy where none matches, see `costmodels.dp.compression_cost.KERNEL_OF`).",
        "",
        *_summary(rows),
        "",
        *charts.image(
            "Exchange time of every priced compressor against the dense ring all-reduce",
            PLOT.removeprefix("generated/compare/"),
            f"Exchange of the {format_bytes(scenario.MESSAGE_BYTES)} gradient at p = {P}: "
            "communication and compute; the dashed line is the dense ring all-reduce.",
        ),
    ]
    return {"generated/compare/compressors.md": "\n".join(lines), PLOT: _chart(rows)}
