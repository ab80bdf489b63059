"""The knobs of ``--framework deepspeed`` and ``--framework megatron-fsdp`` (issues 36 and 39)
for predict-llm / plan-llm: DeepSpeed's ``zero_optimization`` sizes and switches
(costmodels/llm/deepspeed_config.py) and Megatron-FSDP's communication unit and double buffer
(costmodels/llm/framework_dp.py). Each flag is rejected with another framework."""

from __future__ import annotations

import argparse
from typing import Any

from commatlas.cli_types import bounded_int

MAX_ELEMENTS = 10**13
_DS_SIZES = (
    ("--ds-reduce-bucket-size", "reduce_bucket_size", "gradient elements per reduction "
     "bucket (default 500000000)"),
    ("--ds-allgather-bucket-size", "allgather_bucket_size", "ZeRO-1/2: weight elements per "
     "all-gather after the step (default 500000000)"),
    ("--ds-prefetch-bucket-size", "prefetch_bucket_size", "ZeRO-3 stage3_prefetch_bucket_size: "
     "elements fetched ahead per prefetch, 0 = fetch on demand (default 50000000)"),
    ("--ds-param-persistence-threshold", "param_persistence_threshold", "ZeRO-3: tensors "
     "smaller than this stay whole, never gathered (default 100000)"),
    ("--ds-max-live-parameters", "max_live_parameters", "ZeRO-3: gathered elements resident at "
     "once (default 1000000000)"),
    ("--ds-max-reuse-distance", "max_reuse_distance", "ZeRO-3: keep a tensor gathered when "
     "reused within this many elements (default 1000000000)"),
)  # fmt: skip
DS_DESTS = tuple(f"ds_{field}" for _, field, _ in _DS_SIZES) + ("ds_overlap_comm",
                                                               "ds_contiguous_gradients")


def add_framework_flags(parser: argparse.ArgumentParser) -> None:
    """The DeepSpeed and Megatron-FSDP flags (module docstring)."""
    ds = parser.add_argument_group("--framework deepspeed (zero_optimization; defaults: "
                                   "DeepSpeed's)")  # fmt: skip
    for flag, field, text in _DS_SIZES:  # a bucket holds at least one element
        low = 1 if field.endswith("bucket_size") and "prefetch" not in field else 0
        ds.add_argument(flag, dest=f"ds_{field}", type=bounded_int(low, MAX_ELEMENTS),
                        metavar="ELEMENTS", help=text)  # fmt: skip
    ds.add_argument("--ds-overlap-comm", dest="ds_overlap_comm", choices=["on", "off"],
                    help="reduce gradients on a side stream during the backward (default: on "
                    "for ZeRO-3, off for 1-2)")  # fmt: skip
    ds.add_argument("--ds-no-contiguous-gradients", dest="ds_contiguous_gradients",
                    action="store_false", default=None,
                    help="do not copy gradients into the contiguous bucket")  # fmt: skip
    mf = parser.add_argument_group("--framework megatron-fsdp")
    mf.add_argument("--fsdp-unit-size", type=bounded_int(1, MAX_ELEMENTS), metavar="ELEMENTS",
                    help="Megatron's --suggested-communication-unit-size: half of it is "
                    "prefetched (default: max(1e9, 2 x a layer's parameters))")  # fmt: skip
    mf.add_argument("--fsdp-double-buffer", action="store_true", default=None,
                    help="Megatron's --fsdp-double-buffer: at most two layers gathered at once")


def framework_recipe_fields(args: argparse.Namespace) -> dict[str, Any]:
    """TrainingRecipe fields of these flags; ValueError naming a flag the framework ignores."""
    from costmodels.llm.deepspeed_config import DeepSpeedZeroConfig

    framework = getattr(args, "framework", "megatron")
    given = {d: getattr(args, d, None) for d in DS_DESTS}
    given = {d: v for d, v in given.items() if v is not None}
    fsdp = {"fsdp_unit_size": getattr(args, "fsdp_unit_size", None),
            "fsdp_double_buffer": getattr(args, "fsdp_double_buffer", None)}  # fmt: skip
    fsdp = {k: v for k, v in fsdp.items() if v is not None}
    if given and framework != "deepspeed":
        flag = "--" + next(iter(given)).replace("_", "-")
        flag = flag.replace("--ds-contiguous-gradients", "--ds-no-contiguous-gradients")
        raise ValueError(f"{flag} is a DeepSpeed knob: needs --framework deepspeed (got "
                         f"{framework})")  # fmt: skip
    if fsdp and framework != "megatron-fsdp":
        raise ValueError(f"--{next(iter(fsdp)).replace('_', '-')} is a Megatron-FSDP knob: needs "
                         f"--framework megatron-fsdp (got {framework})")  # fmt: skip
    typed = getattr(args, "given_flags", None)  # a job file's knobs: its reader reports them
    _check_stage(args, framework, {d: v for d, v in given.items() if typed is None or d in typed},
                 {k: v for k, v in fsdp.items() if typed is None or k in typed})  # fmt: skip
    out: dict[str, Any] = dict(fsdp)
    if given:
        fields = {d[3:]: v for d, v in given.items()}
        if "overlap_comm" in fields:
            fields["overlap_comm"] = fields["overlap_comm"] == "on"
        out["deepspeed"] = DeepSpeedZeroConfig(**fields)
    return out


_ZERO3_ONLY = ("ds_prefetch_bucket_size", "ds_param_persistence_threshold",
               "ds_max_live_parameters", "ds_max_reuse_distance")


def _check_stage(args: argparse.Namespace, framework: str, given: dict[str, Any],
                 fsdp: dict[str, Any]) -> None:  # fmt: skip
    """A knob of a ZeRO stage that no stage given runs changed nothing: an error naming it
    (predict-llm's --zero; plan-llm's --zero-stages, its default the framework's)."""
    from costmodels.llm.planner import FRAMEWORK_ZERO_STAGES

    zero = getattr(args, "zero", None)
    stages = (zero,) if zero is not None else (getattr(args, "zero_stages", None)
                                               or FRAMEWORK_ZERO_STAGES.get(framework, ()))
    if not stages:
        return
    ask = "--zero 3" if zero is not None else "3 in --zero-stages"
    for dest in _ZERO3_ONLY:
        if dest in given and 3 not in stages:
            raise ValueError(f"--{dest.replace('_', '-')} is a ZeRO-3 knob: needs {ask}")
    if "ds_allgather_bucket_size" in given and not set(stages) & {1, 2}:
        raise ValueError("--ds-allgather-bucket-size gathers ZeRO-1/2's updated weights: needs "
                         f"--zero 1 or 2 (got {', '.join(map(str, stages))})")  # fmt: skip
    if fsdp and 3 not in stages:
        raise ValueError(f"--{next(iter(fsdp)).replace('_', '-')} sets Megatron-FSDP's "
                         f"parameter gathers (optim_grads_params): needs {ask}")  # fmt: skip
