"""What vLLM on ROCm (AMD Instinct MI300X / MI325X / MI355X) does differently from the NVIDIA
engines the serving constants were fitted on, and two constants fitted on ROCm's own runs.

* TP all-reduce: vLLM replaces RCCL with its own custom all-reduce inside a node
  (``disable_custom_all_reduce=False``; vllm/distributed/device_communicators, its ROCm path
  reads peers' buffers over xGMI). For a message of ``n`` bytes among ``p`` GPUs of one node,
  at most ``CUSTOM_MAX_BYTES``: one-shot (every GPU reads the other p - 1 buffers) up to
  ``ONE_SHOT_MAX_BYTES``, two-shot (reduce-scatter then all-gather over the same links) above::

      t = custom_allreduce_s + (p - 1) n / B            one-shot
      t = custom_allreduce_s + 2 (p - 1) / p  n / B     two-shot

  with B the GPU's fabric bandwidth (costmodels.llm.intra_link). Larger messages go to RCCL
  (the NCCL model, as for NVIDIA). The NVIDIA constants (costmodels/data/serving-constants.json)
  were fitted with NCCL's pricing, so this applies on AMD GPUs only.
* ``decode_head_s``: seconds per decoding sequence, layer and query head on one GPU that vLLM's
  ROCm paged-attention decode takes beyond its HBM traffic. On the dev runs a static decode
  step grows by about 110 us (70B) and 260 us (405B) per added sequence at TP 8 whatever the
  context: in proportion to the query heads on a GPU (8 and 16), not to the context read. The
  kernel-level model has no such term (on NVIDIA the fitted per-sequence overhead is 5.5 us).

Both constants are fitted by benchmarks/serving_rocm_fit.py on
costmodels/data/rocm-vllm-mi300x-dev.csv (vLLM 0.10.0, 8 x MI300X; its first line names the
source): ``custom_allreduce_s`` on the latency rows, ``decode_head_s`` on the offline
throughput rows; values, in-sample and leave-one-model-out errors in
costmodels/data/serving-rocm-constants.json. They apply to every AMD preset (MI300X, MI325X,
MI355X share the software path; only the MI300X is measured).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from costmodels.hardware import GPU

DATA = Path(__file__).resolve().parents[1] / "data" / "serving-rocm-constants.json"
CUSTOM_MAX_BYTES = 8 * 2**20  # vLLM's custom all-reduce buffer (max_size 8 MiB)
ONE_SHOT_MAX_BYTES = 512 * 2**10  # one-shot below, two-shot above (vLLM's 8-GPU switch point)


FITTED = ("custom_allreduce_s", "decode_head_s")


@dataclass(frozen=True)
class ROCmConstants:
    custom_allreduce_s: float = 10e-6
    decode_head_s: float = 0.0


_TRIAL: list[ROCmConstants] = []  # constants a fit is trying (:func:`trying`)


@contextmanager
def trying(constants: ROCmConstants) -> Iterator[None]:
    """Price with ``constants`` inside the block (benchmarks/serving_rocm_fit.py)."""
    _TRIAL.append(constants)
    try:
        yield
    finally:
        _TRIAL.pop()


def rocm_constants() -> ROCmConstants:
    """The fitted constants (costmodels/data/serving-rocm-constants.json; defaults if absent)."""
    return _TRIAL[-1] if _TRIAL else _fitted()


@cache
def _fitted() -> ROCmConstants:
    if not DATA.exists():
        return ROCmConstants()
    values = json.loads(DATA.read_text())["constants"]
    return ROCmConstants(**{name: float(values[name]) for name in FITTED})


def is_rocm(gpu: GPU) -> bool:
    """AMD Instinct GPUs (the presets named MI...)."""
    return gpu.name.upper().startswith("MI")


def custom_allreduce_seconds(n_bytes: float, gpus: int, bandwidth_Bps: float,
                             constants: ROCmConstants | None = None) -> float | None:  # fmt: skip
    """Seconds of vLLM's custom all-reduce (module docstring); None when it does not apply
    (one GPU, or a message above its buffer: RCCL runs it)."""
    if gpus <= 1 or n_bytes <= 0 or n_bytes > CUSTOM_MAX_BYTES:
        return None
    c = constants or rocm_constants()
    if n_bytes <= ONE_SHOT_MAX_BYTES:
        return c.custom_allreduce_s + (gpus - 1) * n_bytes / bandwidth_Bps
    return c.custom_allreduce_s + 2 * (gpus - 1) / gpus * n_bytes / bandwidth_Bps
