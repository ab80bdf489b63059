"""Guide: how often to checkpoint, and how much of a job's time survives its failures.

Every number is computed at build time by ``costmodels.goodput``: Daly's published examples
(``interval``), a Llama 3 405B-sized job with the defaults of ``sources`` (``prediction``), the
what-if table (``what_if``) and a seeded simulation (``simulate``).
"""

from __future__ import annotations

import numpy as np

from commatlas.docs_site.guides import _common as c
from costmodels.goodput import (
    MODES,
    Bandwidths,
    checkpoint_size,
    daly_interval,
    exact_interval,
    expected_goodput,
    predict_goodput,
    wall_time_per_work,
    what_if,
    young_interval,
)
from costmodels.goodput import sources as s
from costmodels.goodput.simulate import simulate_wall_time
from costmodels.llm.presets import preset_shape
from costmodels.llm.shapes import Layout

MIN, HOUR = 60.0, 3600.0
DALY_CASES = [(24 * HOUR, "117 min"), (6 * HOUR, "57 min"), (15 * MIN, "9.1 min")]
MODEL, SEQ = "Llama 3.1 405B", 8192
LAYOUT = Layout(tp=8, pp=9, dp=224, global_batch=224, zero=1)  # 16,128 H100s
GPUS_PER_NODE, INTER_PER_GPU = 8, 25e9  # predict-llm's default --inter
WHAT_IF_GPUS, WHAT_IF_STORAGE = (1008, 4032, 16128), (200e9, 2e12)
SIM_TRIALS, SIM_SEGMENTS = 20_000, 20


def minutes(seconds: float) -> str:
    return f"{seconds / MIN:.3g} min"


def duration(seconds: float) -> str:
    """Hours from one hour on, minutes below."""
    return f"{seconds / HOUR:.3g} h" if seconds >= HOUR else minutes(seconds)


def bandwidths() -> Bandwidths:
    host, _ = s.host_link("H100 SXM")
    return Bandwidths(s.DEFAULT_STORAGE_BPS, s.DEFAULT_NODE_STORAGE_BPS, host,
                      GPUS_PER_NODE * INTER_PER_GPU)  # fmt: skip


def daly_rows() -> list[list[str]]:
    """Daly 2006, Figs. 3-5: delta = 5 min, R = 10 min; published tau_opt and ours."""
    rows = []
    for mtbf, published in DALY_CASES:
        tau = float(daly_interval(5 * MIN, mtbf))
        goodput = float(expected_goodput(tau, 5 * MIN, mtbf, 10 * MIN))
        rows.append([duration(mtbf), published, minutes(tau), minutes(young_interval(300, mtbf)),
                     minutes(exact_interval(300, mtbf)), c.format_percent(goodput)])  # fmt: skip
    return rows


def simulation_rows() -> list[list[str]]:
    """The same cases simulated (seeded), against Daly's expected wall-clock time."""
    rng = np.random.default_rng(2006)
    rows = []
    for mtbf, _ in DALY_CASES:
        tau = float(daly_interval(5 * MIN, mtbf))
        wall = simulate_wall_time(SIM_SEGMENTS, tau=tau, delta=5 * MIN, mtbf=mtbf,
                                  restart=10 * MIN, trials=SIM_TRIALS, rng=rng)  # fmt: skip
        simulated = wall.mean() / (SIM_SEGMENTS * tau)
        formula = float(wall_time_per_work(tau, 5 * MIN, mtbf, 10 * MIN))
        rows.append([duration(mtbf), f"{formula:.4f}", f"{simulated:.4f}",
                     f"{100 * (simulated / formula - 1):+.2f} %"])  # fmt: skip
    return rows


def llama_results() -> dict[str, object]:
    size = checkpoint_size(preset_shape(MODEL, SEQ), LAYOUT, GPUS_PER_NODE)
    return {mode: predict_goodput(size, mode, bandwidths(), gpu_mtbf_s=s.DEFAULT_GPU_MTBF_S,
                                  restart_s=s.DEFAULT_RESTART_S) for mode in MODES}  # fmt: skip


def llama_rows() -> list[list[str]]:
    rows = []
    for mode, r in llama_results().items():
        rows.append([mode, c.format_seconds(r.checkpoint_write_s),
                     c.format_seconds(r.cost.persist_s), minutes(r.optimal_interval_s),
                     minutes(r.restart_s), c.format_percent(r.expected_goodput)])  # fmt: skip
    return rows


def what_if_rows() -> list[list[str]]:
    rows = what_if(preset_shape(MODEL, SEQ), LAYOUT, gpus_per_node=GPUS_PER_NODE,
                   bandwidths=bandwidths(), gpu_mtbf_s=s.DEFAULT_GPU_MTBF_S,
                   restart_s=s.DEFAULT_RESTART_S, gpu_counts=WHAT_IF_GPUS,
                   storage_Bps=WHAT_IF_STORAGE, intervals_s=(None, HOUR))  # fmt: skip
    by_key = {(r["gpus"], r["storage_Bps"], r["optimal"], r["mode"]): r for r in rows}
    out = []
    for gpus in WHAT_IF_GPUS:
        for storage in WHAT_IF_STORAGE:
            cells = [f"{gpus:,}", c.format_bandwidth(storage)]
            for optimal in (True, False):
                for mode in MODES:
                    cells.append(c.format_percent(by_key[gpus, storage, optimal, mode]
                                                  ["expected_goodput"]))  # fmt: skip
            out.append(cells)
    return out


def formulas() -> list[str]:
    from costmodels.formulas.goodput import DALY_INTERVAL, EXACT_INTERVAL, YOUNG_INTERVAL

    return ["$$", c.display_math(YOUNG_INTERVAL, r"\tau_{Young}"), "$$", "",
            "$$", c.display_math(DALY_INTERVAL.args[0][0], r"\tau_{Daly}") + r"\quad (\delta < 2M)",
            "$$", "", "$$", c.display_math(EXACT_INTERVAL, r"\tau_{exact}"), "$$", ""]  # fmt: skip


def interval_errors() -> dict[str, float]:
    """Young's and Daly's relative distance from the exact optimum over Daly's cases."""
    young = [float(young_interval(5 * MIN, m) / exact_interval(5 * MIN, m)) - 1
             for m, _ in DALY_CASES]  # fmt: skip
    daly = [abs(float(daly_interval(5 * MIN, m) / exact_interval(5 * MIN, m)) - 1)
            for m, _ in DALY_CASES]  # fmt: skip
    return {"young_24h": young[0], "young_15min": young[-1], "daly_max": max(daly)}


def what_if_goodput(gpus: int, storage: float, optimal: bool, mode: str) -> float:
    rows = what_if(preset_shape(MODEL, SEQ), LAYOUT, gpus_per_node=GPUS_PER_NODE,
                   bandwidths=bandwidths(), gpu_mtbf_s=s.DEFAULT_GPU_MTBF_S,
                   restart_s=s.DEFAULT_RESTART_S, gpu_counts=[gpus], storage_Bps=[storage],
                   intervals_s=[None if optimal else HOUR], modes=[mode])  # fmt: skip
    return rows[0]["expected_goodput"]
