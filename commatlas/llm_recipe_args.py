"""The framework-recipe flags of ``predict-llm`` / ``plan-llm`` (issue 26): how the framework runs
the step (costmodels.llm.recipe.TrainingRecipe), in a module of their own so that the shared
argument module (commatlas/llm_args.py) only calls ``add_recipe_flags``."""

from __future__ import annotations

import argparse

from commatlas.cli_types import bounded_int, positive_float
from commatlas.llm_framework_args import add_framework_flags, framework_recipe_fields


def add_recipe_flags(parser: argparse.ArgumentParser) -> None:
    """How the framework runs the step (costmodels.llm.recipe, issue 26); None = its default."""
    from costmodels.llm.fp8_recipes import FP8_RECIPES
    from costmodels.llm.moe_dispatch import DISPATCHERS
    from costmodels.llm.recipe import REDUCE_DTYPES

    run = parser.add_argument_group("framework recipe (defaults: what the framework does)")
    run.add_argument("--fp8-recipe", choices=FP8_RECIPES,
                     help="float8 scaling with --precision fp8 (default: delayed for Megatron, "
                     "tensorwise for PyTorch; rowwise runs slower GEMMs)")  # fmt: skip
    run.add_argument(
        "--async-tp",
        action="store_true",
        help="overlap TP collectives with their GEMMs (torchtitan async TP)",
    )
    run.add_argument(
        "--reduce-dtype",
        choices=REDUCE_DTYPES,
        help="data-parallel gradient reduction dtype (default: the framework's, fp32)",
    )
    run.add_argument(
        "--no-reshard-after-forward",
        dest="reshard_after_forward",
        action="store_false",
        default=True,
        help="FSDP/ZeRO-3: keep gathered weights from forward to backward",
    )
    run.add_argument(
        "--prefetch",
        type=bounded_int(0, 8),
        help="FSDP/ZeRO-3: blocks all-gathered ahead of the one computing (default 1)",
    )
    run.add_argument(
        "--fp8-all-gather",
        action="store_true",
        default=None,
        help="ZeRO-3/FSDP: gather weights in fp8 with --precision fp8 (default: Megatron yes, "
        "PyTorch no, as torchtitan's enable_fsdp_float8_all_gather)",
    )
    run.add_argument("--moe-dispatcher", choices=DISPATCHERS,
                     help="expert exchange: alltoall (flat), deepep (once per node over the "
                     "network, then NVLink), hybridep (the same form at HybridEP's published "
                     "rates) (default: alltoall, "
                     "or DeepSeek's node-limited form for such a model)")  # fmt: skip
    run.add_argument("--moe-imbalance", type=positive_float, metavar="MAX/MEAN",
                     help="the busiest expert-parallel rank's routed tokens over the mean, as "
                     "you measured it (default: the chance spread of a balanced router, a "
                     "floor)")  # fmt: skip
    run.add_argument("--cuda-graphs", action="store_true",
                     help="replay each layer's kernels from a CUDA graph (no per-kernel host "
                     "launch time)")  # fmt: skip
    run.add_argument(
        "--power-cap",
        type=positive_float,
        metavar="WATTS",
        help="GPU board power limit (e.g. 500 for torchtitan's H100 runs)",
    )
    add_framework_flags(parser)  # --framework deepspeed / megatron-fsdp knobs


def check_recipe_flags(args: argparse.Namespace) -> None:
    """A recipe flag that would change nothing is an error naming it (as ``--dp-shard`` without
    ``--zero 3`` is), not silently ignored (issue 35): ``--fp8-recipe`` needs ``--precision
    fp8``, ``--async-tp`` a TP group (``--tp`` 2 or more; plan-llm applies it to the layouts
    with one), ``--prefetch`` ZeRO-3 (``--zero 3``; plan-llm: ``--zero-stages`` with 3)."""
    if args.fp8_recipe is not None and args.precision != "fp8":
        raise ValueError(f"--fp8-recipe {args.fp8_recipe} scales fp8 GEMMs: needs --precision "
                         f"fp8 (got {args.precision})")  # fmt: skip
    if args.async_tp and getattr(args, "tp", None) == 1:
        raise ValueError("--async-tp overlaps the TP collectives with their GEMMs: needs --tp 2 "
                         "or more (--tp 1 has none)")  # fmt: skip
    framework = getattr(args, "framework", "megatron")
    _check_framework_knobs(args, framework)
    if args.prefetch is not None:
        zero = getattr(args, "zero", None)
        stages = getattr(args, "zero_stages", None)
        if zero is not None and zero != 3:
            raise ValueError(f"--prefetch all-gathers ZeRO-3/FSDP weights ahead: needs --zero 3 "
                             f"(got --zero {zero})")  # fmt: skip
        if zero is None and stages is not None and 3 not in stages:
            raise ValueError("--prefetch all-gathers ZeRO-3/FSDP weights ahead: needs 3 in "
                             "--zero-stages")  # fmt: skip


def _check_framework_knobs(args: argparse.Namespace, framework: str) -> None:
    """Generic FSDP flags that DeepSpeed and Megatron-FSDP replace by their own knobs
    (costmodels/llm/framework_dp.py): given, they changed nothing."""
    own = {"deepspeed": "--ds-prefetch-bucket-size", "megatron-fsdp": "--fsdp-unit-size or "
           "--fsdp-double-buffer"}.get(framework)  # fmt: skip
    if own and args.prefetch is not None:
        raise ValueError(f"--prefetch is FSDP2's blocks ahead; --framework {framework} "
                         f"prefetches by its own knob: {own}")  # fmt: skip
    if framework == "deepspeed" and not args.reshard_after_forward:
        raise ValueError("--no-reshard-after-forward is FSDP2's; DeepSpeed keeps gathered "
                         "weights by --ds-max-reuse-distance")  # fmt: skip
    if framework == "deepspeed" and getattr(args, "dp_shard", 0):
        raise ValueError("--dp-shard (HSDP) is not DeepSpeed's: its ZeRO-3 shards over every "
                         "data-parallel rank (ZeRO++'s hpZ is not modelled)")  # fmt: skip


def check_recipe_for_model(args: argparse.Namespace, shape: object) -> None:
    """The MoE recipe flags against the model and the EP degrees (``--ep``: predict-llm's one,
    plan-llm's list): ``--moe-dispatcher`` and ``--moe-imbalance`` need experts, and
    ``--moe-imbalance`` an EP group (with ``--ep 1`` every rank holds every expert, so no rank
    is busier than the mean; it multiplied the expert GEMMs before)."""
    typed = getattr(args, "given_flags", None)  # a job file's dispatcher is not refused
    given = [flag for flag, dest in (("--moe-dispatcher", "moe_dispatcher"),
                                     ("--moe-imbalance", "moe_imbalance"))
             if getattr(args, dest, None) is not None and (typed is None or dest in typed)]
    if given and getattr(shape, "experts", 1) <= 1:
        raise ValueError(f"{given[0]} prices a mixture-of-experts exchange: the model is dense "
                         "(--experts 1)")  # fmt: skip
    ep = getattr(args, "ep", 1)
    if getattr(args, "moe_imbalance", None) is not None and max(
            ep if isinstance(ep, tuple) else (ep,)) == 1:  # fmt: skip
        raise ValueError("--moe-imbalance is the busiest expert-parallel rank's load over the "
                         "mean: needs --ep 2 or more (with --ep 1 every rank holds every "
                         "expert)")  # fmt: skip


def recipe_from_args(args: argparse.Namespace):  # noqa: ANN201
    """The TrainingRecipe of the recipe flags (checked by :func:`check_recipe_flags`)."""
    from costmodels.llm.recipe import TrainingRecipe

    check_recipe_flags(args)
    prefetch = 1 if args.prefetch is None else args.prefetch
    return TrainingRecipe(reduce_dtype=args.reduce_dtype,
                          reshard_after_forward=args.reshard_after_forward,
                          prefetch=prefetch, fp8_recipe=args.fp8_recipe,
                          async_tp=args.async_tp,
                          fp8_param_gather=args.fp8_all_gather,
                          moe_dispatcher=getattr(args, "moe_dispatcher", None),
                          moe_imbalance=_imbalance(getattr(args, "moe_imbalance", None)),
                          cuda_graphs=getattr(args, "cuda_graphs", False),
                          **framework_recipe_fields(args))  # fmt: skip


def _imbalance(value: float | None) -> float | None:
    if value is not None and not 1.0 <= value <= 64.0:
        raise ValueError(f"--moe-imbalance {value:g}: the busiest rank's tokens over the mean is "
                         "between 1 and 64")  # fmt: skip
    return value
