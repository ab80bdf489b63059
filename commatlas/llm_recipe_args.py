"""The framework-recipe flags of ``predict-llm`` / ``plan-llm`` (issue 26): how the framework runs
the step (costmodels.llm.recipe.TrainingRecipe), in a module of their own so that the shared
argument module (commatlas/llm_args.py) only calls ``add_recipe_flags``."""

from __future__ import annotations

import argparse

from commatlas.cli_types import bounded_int, positive_float


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
        default=1,
        help="FSDP/ZeRO-3: blocks all-gathered ahead of the one computing",
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
                     "network, then NVLink), hybridep (priced as deepep) (default: alltoall, "
                     "or DeepSeek's node-limited form for such a model)")  # fmt: skip
    run.add_argument("--cuda-graphs", action="store_true",
                     help="replay each layer's kernels from a CUDA graph (no per-kernel host "
                     "launch time)")  # fmt: skip
    run.add_argument(
        "--power-cap",
        type=positive_float,
        metavar="WATTS",
        help="GPU board power limit (e.g. 500 for torchtitan's H100 runs)",
    )


def recipe_from_args(args: argparse.Namespace):  # noqa: ANN201
    """The TrainingRecipe of the recipe flags."""
    from costmodels.llm.recipe import TrainingRecipe

    return TrainingRecipe(reduce_dtype=args.reduce_dtype,
                          reshard_after_forward=args.reshard_after_forward,
                          prefetch=args.prefetch, fp8_recipe=args.fp8_recipe,
                          async_tp=args.async_tp,
                          fp8_param_gather=args.fp8_all_gather,
                          moe_dispatcher=getattr(args, "moe_dispatcher", None),
                          cuda_graphs=getattr(args, "cuda_graphs", False))  # fmt: skip
