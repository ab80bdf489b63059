"""The one reference scenario behind every number the site computes (plots, tables, guides).

A page that prices a technique states the values it used; they all come from here, so two pages
never disagree about "the cluster". The scenario is a current training cluster, not a claim
about any particular one:

- nodes of ``GPUS_PER_NODE`` = 8 H200 GPUs joined by NVLink 4 (intra-node), one InfiniBand HDR
  link (200 Gbit/s) per GPU between nodes; link numbers are the presets of
  ``costmodels.hardware.links`` (nominal bandwidth x achievable fraction, preset latency);
- the reduction costs ``gamma`` = 3 / memory bandwidth of an H200 (read two operands, write one);
- the message is the fp32 gradient of a 25M-parameter model (ResNet-50 has 25.6M), n = 100 MB;
- compressors keep 1 % of the elements (k = 0.01 d), quantizers send the record's ``bits``
  property (8 where a record has none), PowerSGD uses rank 4 on a square-ish view of the tensor,
  their compute (gamma_c) is the H200-measured kernel fit of ``costmodels.dp.compression_cost``;
- parameter servers: one shard per worker (S = p); hierarchical models: g = 8 ranks per node;
  local SGD: H = 8 local steps; pipelines: 10 ms forward and 20 ms backward per micro-batch,
  m = 4p micro-batches, v = 2 virtual stages per GPU;
- stragglers (illustrative): a worker's step is 90 ms plus an exponential 10 ms on average
  (t_0, theta), with k_b = 2 backup workers;
- checkpoints: an asynchronous (CheckFreq) snapshot overlaps one step's forward and backward,
  t_ov = 30 ms (the pipelines' forward plus backward).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from costmodels.dp.compression_cost import KERNEL_OF, calibrated_gamma_c
from costmodels.dp.compression_exchange import square_view
from costmodels.hardware import get_gpu, get_link
from costmodels.nccl.constants import BASE_LATENCY_US, LAUNCH_OVERHEAD_US

GPUS_PER_NODE = 8
INTER_LINK = "hdr"
INTRA_LINK = "nvlink4"
GPU = "h200"
MESSAGE_BYTES = 100e6
DENSITY = 0.01
DEFAULT_BITS = 8
POWERSGD_RANK = 4
LOCAL_STEPS = 8
FORWARD_S = 0.010
BACKWARD_S = 0.020
STEP_SHIFT_S, STEP_TAIL_S, BACKUP_WORKERS = 0.090, 0.010, 2  # stragglers: t_0, theta, k_b


def link_values() -> dict[str, float]:
    """alpha/beta across nodes, alpha_intra/beta_intra inside one, gamma of the reduction."""
    inter, intra = get_link(INTER_LINK), get_link(INTRA_LINK)
    return {
        "alpha": inter.alpha_s,
        "beta": inter.beta_s_per_byte,
        "alpha_intra": intra.alpha_s,
        "beta_intra": intra.beta_s_per_byte,
        "gamma": 3.0 / get_gpu(GPU).memory_bandwidth_Bps,
    }


def describe() -> str:
    """One sentence naming the scenario's values, for captions."""
    inter, intra = get_link(INTER_LINK), get_link(INTRA_LINK)
    return (
        f"{inter.name} between nodes ({inter.bandwidth_Bps * inter.achievable_fraction / 1e9:.1f}"
        f" GB/s, {inter.alpha_s * 1e6:g} us), {intra.name} inside a node of {GPUS_PER_NODE} GPUs "
        f"({intra.bandwidth_Bps * intra.achievable_fraction / 1e9:.0f} GB/s; up to "
        f"{GPUS_PER_NODE} workers share one node), "
        f"reduction at {get_gpu(GPU).memory_bandwidth_Bps / 3e12:.1f} TB/s"
    )


def symbol_values(model_id: str, p: Any, n: Any, bits: float | None = None) -> dict[str, Any]:
    """Values for every symbol a cost model may use, for p workers and an n-byte fp32 message.

    ``p`` and ``n`` may be numpy arrays (broadcast together); derived values follow them
    (d = n / 4, k = DENSITY d, S = p, the matrix view of d). alpha and beta follow p too: up to
    ``GPUS_PER_NODE`` workers sit in one node and a flat collective runs over its NVLink; from
    two nodes on, over the network (alpha_intra / beta_intra stay NVLink for the models with a
    node structure). Symbols a model does not use are ignored by ``CostModel.evaluate``.
    """
    ranks = np.asarray(p, dtype=float)
    links = link_values()
    one_node = ranks <= GPUS_PER_NODE
    size = np.asarray(n, dtype=float)
    d = size / 4.0
    rows, cols = np.vectorize(square_view, otypes=[float, float])(d)
    # The kernels were timed on an H200, the scenario's GPU: their fits apply unscaled.
    gamma_c = calibrated_gamma_c(model_id) if model_id in KERNEL_OF else 0.0
    return {
        **links,
        "alpha": np.where(one_node, links["alpha_intra"], links["alpha"]),
        "beta": np.where(one_node, links["beta_intra"], links["beta"]),
        "p": ranks,
        "n": size,
        "d": d,
        "k": np.maximum(1.0, np.ceil(DENSITY * d)),
        "w_v": 4.0,
        "w_i": 4.0,
        "b": float(bits if bits is not None else DEFAULT_BITS),
        "s": 2.0 ** (DEFAULT_BITS - 1),
        "r": float(POWERSGD_RANK),
        "rows": rows,
        "cols": cols,
        "gamma_c": gamma_c,
        "S": ranks,
        "g": float(GPUS_PER_NODE),
        "H": float(LOCAL_STEPS),
        "m": 4 * ranks,
        "v": 2.0,
        "t_f": FORWARD_S,
        "t_b": BACKWARD_S,
        # Techniques after the surveys (costmodels/formulas/recent), illustrative values: half of
        # the backward is the weight gradient; DualPipe's overlapped F&B gains nothing here;
        # DeepSeek-V3's routing (top-8 experts, at most 4 nodes); Streaming DiLoCo fragments.
        "t_w": BACKWARD_S / 2,
        "t_fb": FORWARD_S + BACKWARD_S,
        "k_e": 8.0,
        "M_n": 4.0,
        "F": 4.0,
        # NCCL's model (costmodels/nccl): one NIC per GPU, the Simple protocol at full rate
        # (eta = 1), and per call the launch estimate plus NCCL's Simple ring base latency.
        "alpha_0": (LAUNCH_OVERHEAD_US + BASE_LATENCY_US["ring"]["simple"]) * 1e-6,
        "eta": 1.0,
        "K": float(GPUS_PER_NODE),
        # Failures and checkpoints (costmodels/goodput): the per-GPU mean time between failures
        # derived from Llama 3's interruption counts, Daly's 10 min restart, a checkpoint every
        # hour, one day of work; an async snapshot overlaps one step's forward and backward.
        **_checkpoint_values(),
        # Stragglers (costmodels/stragglers), illustrative: a 100 ms step whose compute is
        # 90 ms plus an exponential 10 ms on average (cv 0.1), two backup workers.
        "t_0": STEP_SHIFT_S,
        "theta": STEP_TAIL_S,
        "k_b": float(BACKUP_WORKERS),
    }


def _checkpoint_values() -> dict[str, float]:
    from costmodels.goodput.sources import DEFAULT_GPU_MTBF_S, DEFAULT_RESTART_S

    return {"M_g": DEFAULT_GPU_MTBF_S, "R_f": DEFAULT_RESTART_S, "tau_c": 3600.0, "T_s": 86400.0,
            "t_ov": FORWARD_S + BACKWARD_S}  # fmt: skip


def cluster(nodes: int) -> Any:
    """The scenario as a ``costmodels.dp.predict.Cluster`` of ``nodes`` x ``GPUS_PER_NODE`` GPUs.

    The same links and reduction rate as :func:`link_values` (bandwidths at the achievable
    fraction, reduction at memory bandwidth / 3), for the iteration predictor.
    """
    from costmodels.dp.predict import Cluster

    inter, intra = get_link(INTER_LINK), get_link(INTRA_LINK)
    return Cluster(
        nodes=nodes,
        gpus_per_node=GPUS_PER_NODE,
        intra_bandwidth_Bps=1.0 / intra.beta_s_per_byte,
        intra_latency_s=intra.alpha_s,
        inter_bandwidth_Bps=1.0 / inter.beta_s_per_byte,
        inter_latency_s=inter.alpha_s,
        reduction_Bps=get_gpu(GPU).memory_bandwidth_Bps / 3.0,
    )
