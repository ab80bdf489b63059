"""``generated/scenario.md``: the values behind every computed number on the site."""

from __future__ import annotations

from commatlas.docs_site import Files, scenario
from costmodels.hardware import get_gpu, get_link
from costmodels.symbols import SYMBOLS

EXAMPLE_P = 64


def _value(value: object) -> str:
    number = float(getattr(value, "item", lambda: value)())  # numpy scalar or float
    return f"{number:.4g}"


def scenario_page() -> str:
    values = scenario.symbol_values("topk-sparsification", EXAMPLE_P, scenario.MESSAGE_BYTES)
    inter, intra, gpu = (
        get_link(scenario.INTER_LINK),
        get_link(scenario.INTRA_LINK),
        get_gpu(scenario.GPU),
    )
    lines = [
        "# The reference scenario",
        "",
        "Every plot, table and guide on this site that prices a technique uses these values",
        "unless it says otherwise (`commatlas/docs_site/scenario.py`). They describe a current",
        "training cluster, not a measured one; for your own cluster use the",
        "[calculator](../calculator.md) or [calibrate it](guides/calibrate-cluster.md).",
        "",
        f"- Between nodes: {inter.name}, {inter.bandwidth_Bps / 1e9:g} GB/s nominal x "
        f"{inter.achievable_fraction:g} achievable, latency {inter.alpha_s * 1e6:g} us.",
        f"- Inside a node of {scenario.GPUS_PER_NODE} GPUs: {intra.name}, "
        f"{intra.bandwidth_Bps / 1e9:g} GB/s x {intra.achievable_fraction:g}, latency "
        f"{intra.alpha_s * 1e6:g} us.",
        f"- GPU: {gpu.name}, memory bandwidth {gpu.memory_bandwidth_Bps / 1e12:g} TB/s; a "
        "reduction reads two operands and writes one, so gamma = 3 / memory bandwidth.",
        f"- Message: n = {scenario.MESSAGE_BYTES / 1e6:g} MB of fp32 gradient "
        f"(d = {scenario.MESSAGE_BYTES / 4e6:g}M elements).",
        f"- Compression: density {scenario.DENSITY:g} (k = density x d), "
        f"{scenario.DEFAULT_BITS} bits where a quantizer's record names none, PowerSGD rank "
        f"{scenario.POWERSGD_RANK}; compute per dense byte (gamma_c) from the H200 kernel fits.",
        f"- Parameter servers: S = p shards; local SGD: H = {scenario.LOCAL_STEPS}; pipelines: "
        f"{scenario.FORWARD_S * 1e3:g} ms forward, {scenario.BACKWARD_S * 1e3:g} ms backward per "
        "micro-batch, m = 4p micro-batches, v = 2 virtual stages per GPU; quantization levels "
        "s = 2^(bits - 1).",
        "",
        f"Every symbol's value at p = {EXAMPLE_P} (gamma_c shown for top-k; it is per method):",
        "",
        "| Symbol | Meaning | Value (SI) | Unit |",
        "|---|---|---|---|",
    ]
    for key, info in SYMBOLS.items():
        if key in values:
            lines.append(
                f"| \\({info.latex}\\) | {info.meaning} | {_value(values[key])} | {info.unit} |"
            )
    return "\n".join(lines + [""])


def scenario_files(tax: object = None) -> Files:
    return {"generated/scenario.md": scenario_page()}
