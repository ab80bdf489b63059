"""What costmodels/llm/step.py's ``predict_step`` returns: one training step's time, memory and
utilisation, with the time split into ``BREAKDOWN_KEYS`` (step.py's module docstring says what
each part holds)."""

from __future__ import annotations

from dataclasses import dataclass

BREAKDOWN_KEYS = ("gemm", "attention", "memory_bound", "optimizer", "communication_exposed",
                  "bubble", "host_idle")  # fmt: skip


@dataclass(frozen=True)
class StepPrediction:
    """One optimizer step, SI units. ``*_comm_s`` are per-step seconds of each dimension's
    communication on one GPU of the busiest stage (before overlap); ``exposed_comm_s`` is what
    adds to the step after overlap (= compute_breakdown_s["communication_exposed"]).
    ``memory_breakdown_bytes`` sums exactly to ``memory_per_gpu_bytes``; ``fits`` compares it
    with ``usable_memory_bytes`` (the GPU's memory less ``memory_reserve_bytes`` the driver
    keeps)."""

    iteration_time_s: float
    compute_s: float  # the slowest stage's kernel time over the step (GEMM + attention + other)
    memory_per_gpu_bytes: float
    fits: bool
    bubble_fraction: float
    model_flops_utilization: float
    hardware_flops_utilization: float
    tflops_per_gpu: float
    tp_comm_s: float
    pp_comm_s: float
    dp_comm_s: float
    cp_comm_s: float
    ep_comm_s: float
    exposed_comm_s: float
    tokens_per_s_per_gpu: float
    compute_breakdown_s: dict[str, float]
    memory_breakdown_bytes: dict[str, float]
    usable_memory_bytes: float
    memory_reserve_bytes: float
    expected_error_pct: float
    unvalidated_mechanisms: tuple[str, ...]
    # "fits" | "may not fit" (within memory.MAY_NOT_FIT_BAND above the usable memory) |
    # "does not fit"; ``fits`` stays the strict comparison
    memory_verdict: str = "fits"
    # dev runs with exactly this combination of mechanisms behind ``expected_error_pct``, and
    # whether they are fewer than 10 (the band is then widened: combination_bands.py)
    expected_error_rows: int = 0
    expected_error_few_rows: bool = True
    # share of the step the GPU idles waiting for the host to launch kernels (error_bands.py
    # tags a step at HOST_BOUND_SHARE or more "host-bound")
    host_bound_share: float = 0.0

    @property
    def host_idle_share(self) -> float:
        """Share of the step the GPU waits on the host in any way: launches (``host_bound_share``)
        plus the per-micro-batch and per-step host work (``compute_breakdown_s["host_idle"]``)."""
        total = self.iteration_time_s
        return self.compute_breakdown_s.get("host_idle", 0.0) / total if total > 0 else 0.0
