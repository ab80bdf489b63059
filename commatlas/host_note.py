"""What a host-bound ``predict-llm`` step assumed about the host, in one line (issue 36: a
prediction states its assumptions and how far off it tends to be).

A step is host-bound when the GPU waits on the host for ``HOST_BOUND_SHARE`` or more of it
(``StepPrediction.host_idle_share``: launches plus the per-micro-batch and per-step host work;
the error band's "host-bound" tag counts the launches alone, ``host_bound_share``). How long the
host takes per kernel is the least transferable constant of the step model: the shipped value is
fitted with vTrain's Megatron-DeepSpeed runs (Bang et al., MICRO 2024;
costmodels/data/llm-step-constants.json), the only dev source with host-bound runs, and a
Megatron-style layer on a newer stack (torch 2.13 on the CPU backend plus the CUDA host work
measured in the H200 profile, torch 2.11) was measured at about 60 % of it
(benchmarks/llm_host_probe.py, costmodels/data/llm-host-probe.json). The line says the share,
both values and the step with the measured one, so the reader sees the range rather than one
number.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from costmodels.formatting import format_seconds
from costmodels.llm.constants import StepConstants, default_constants
from costmodels.llm.error_bands import HOST_BOUND_SHARE
from costmodels.llm.step import StepPrediction, predict_step
from costmodels.validation.loso import host_prior


def host_note(step: StepPrediction, framework: str,
              repredict: Callable[[StepConstants], StepPrediction],
              calibrated: bool = False) -> str:  # fmt: skip
    """The line for a host-bound ``step`` ("" otherwise); ``repredict`` predicts the same step
    with other constants; ``calibrated``: the step already fits a measured one.

        >>> from costmodels.hardware import get_gpu
        >>> from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape
        >>> from costmodels.llm.step import predict_step
        >>> small = TransformerShape(layers=12, hidden=1024, heads=16, seq_len=1024, vocab=50257)
        >>> layout = Layout(tp=8, pp=1, dp=1, global_batch=8, recompute="full")
        >>> node = LLMCluster(get_gpu("A100 80GB SXM"), 8, 240e9, 25e9)
        >>> def again(c): return predict_step(small, layout, node, precision="fp16",
        ...                                   framework="megatron-legacy", constants=c)
        >>> host_note(again(None), "megatron-legacy", again)[:48]
        'host-bound: the GPU waits on the host for 62 % o'
    """
    share = step.host_idle_share
    if share < HOST_BOUND_SHARE:
        return ""
    shipped = default_constants()
    measured = replace(shipped, host_s_per_kernel=host_prior())
    other = repredict(measured).iteration_time_s
    fit = "" if calibrated else "; a measured step (--measured-step) fits it"
    return (
        f"host-bound: the GPU waits on the host for {100 * share:.0f} % of the step, at "
        f"{shipped.host_seconds(framework) * 1e6:.0f} us of host time per kernel (fitted on "
        "vTrain's Megatron-DeepSpeed runs on one A100 node); a newer PyTorch stack was measured "
        f"at {measured.host_seconds(framework) * 1e6:.0f} us (benchmarks/llm_host_probe.py), "
        f"which gives {format_seconds(other)} per step. CUDA graphs (--cuda-graphs) remove most "
        f"of this time{fit}."
    )


def step_host_note(step: StepPrediction, shape: object, layout: object, cluster: object,
                   options: dict, calibration: object) -> str:  # fmt: skip
    """``host_note`` of ``predict-llm``'s step, re-predicted with its own inputs."""

    def again(constants: StepConstants) -> StepPrediction:
        return predict_step(shape, layout, cluster, **options, calibration=calibration,
                            constants=constants)  # fmt: skip

    return host_note(step, options["framework"], again, calibrated=calibration is not None)
