"""The LLM planner page's plan-llm recipe, shape and search inputs (issue 39): FP8 recipes, MoE
dispatcher, CUDA graphs, multi-token prediction, expert TP and the first/last stage layers.

Each test runs the page with a URL key and compares its best step time to
``costmodels.llm.planner.plan`` called with what plan-llm builds from the same flag
(commatlas/llm_commands.py ``_plan_choices``, llm_recipe_args.py ``recipe_from_args``), shape
from the presets, cluster from the page's default links (rebuilt in test_app_llm.py), and
checks the input changed the plan. A bad URL value names the field.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest
from app_helpers import app_test, assert_message
from test_app_llm import cluster, layouts_table

from costmodels.llm.planner import plan
from costmodels.llm.presets import preset_shape
from costmodels.llm.recipe import TrainingRecipe

PAGE = str(Path(__file__).parents[2] / "app_pages" / "llm_planner.py")
run_page = partial(app_test, PAGE)
NARROW = dict(mbs="1", zero="1", rc="full", sp="on", maxv="1")  # a small search: fast
CHOICES = dict(micro_batches=(1,), zero_stages=(1,), recompute=("full",),
               sequence_parallel=(True,), max_interleave=1)  # fmt: skip


def best_time(at) -> float:
    return float(layouts_table(at).iloc[0]["step time (s)"])


def planned(shape, gpu: str, gpus: int, batch: int, options: dict, **choices) -> float:
    """plan-llm's best step time (the planner function plan-llm calls)."""
    machine = cluster(gpu, 8, None, None)
    ranked = plan(shape, gpus, machine, batch, step_options={"calibration": None, **options},
                  **{**CHOICES, **choices})  # fmt: skip
    return ranked[0].prediction.iteration_time_s


@pytest.mark.parametrize("recipe", ["fp8-cs", "mxfp8"])
def test_fp8_recipe_choices_are_plan_llms(recipe: str) -> None:
    at = run_page(gpu="B200", nodes="1", prec="fp8", fp8r=recipe, **NARROW)
    shape = preset_shape("Llama 2 7B", 4096)
    expected = planned(shape, "B200", 8, 256, {"precision": "fp8", "framework": "megatron",
                       "recipe": TrainingRecipe(fp8_recipe=recipe)})  # fmt: skip
    default = planned(shape, "B200", 8, 256, {"precision": "fp8", "framework": "megatron",
                      "recipe": TrainingRecipe()})  # fmt: skip
    assert best_time(at) == pytest.approx(expected, rel=1e-9)
    assert expected != pytest.approx(default, rel=1e-6)  # the recipe changed the plan


def test_moe_dispatcher_cuda_graphs_and_expert_tp_are_plan_llms() -> None:
    query = dict(model="Mixtral 8x7B", nodes="4", gbatch="64", ep="8", **NARROW)
    shape = preset_shape("Mixtral 8x7B", 4096)
    base = {"precision": "bf16", "framework": "megatron"}
    at = run_page(moed="deepep", cg="1", **query)
    recipe = TrainingRecipe(moe_dispatcher="deepep", cuda_graphs=True)
    expected = planned(shape, "A100 80GB SXM", 32, 64, {**base, "recipe": recipe},
                       expert_parallel=(8,))  # fmt: skip
    plain = planned(shape, "A100 80GB SXM", 32, 64, {**base, "recipe": TrainingRecipe()},
                    expert_parallel=(8,))  # fmt: skip
    assert best_time(at) == pytest.approx(expected, rel=1e-9)
    assert expected != pytest.approx(plain, rel=1e-6)
    at.sidebar.multiselect(key="etp").set_value([2]).run()  # plan-llm --etp 2
    with_etp = planned(shape, "A100 80GB SXM", 32, 64, {**base, "recipe": recipe},
                       expert_parallel=(8,), expert_tensor_parallel=(2,))  # fmt: skip
    assert best_time(at) == pytest.approx(with_etp, rel=1e-9)
    assert with_etp != pytest.approx(expected, rel=1e-6)
    assert at.query_params["etp"] in (["2"], "2")


def test_mtp_and_stage_layers_are_plan_llms_and_a_hybrid_refuses_mtp() -> None:
    shape = preset_shape("Llama 2 70B", 4096)  # pipelined on 32 A100s: stage layers matter
    base = {"precision": "bf16", "framework": "megatron", "recipe": TrainingRecipe()}
    at = run_page(model="Llama 2 70B", mtp="1", nodes="4", **NARROW)
    expected = planned(replace(shape, mtp=1), "A100 80GB SXM", 32, 256, base)
    assert best_time(at) == pytest.approx(expected, rel=1e-9)
    assert expected != pytest.approx(planned(shape, "A100 80GB SXM", 32, 256, base), rel=1e-6)
    at.sidebar.number_input(key="fsl").set_value(16).run()  # plan-llm --first-stage-layers 16
    at.sidebar.number_input(key="lsl").set_value(16).run()
    staged = planned(replace(shape, mtp=1), "A100 80GB SXM", 32, 256, base, stage_layers=(16, 16))
    assert best_time(at) == pytest.approx(staged, rel=1e-9)
    assert staged != pytest.approx(expected, rel=1e-6)
    at.sidebar.selectbox(key="model").set_value("Nemotron-H 8B").run()
    assert_message(at, "error", "Multi-token prediction depth 1: multi-token prediction is not "
                   "priced for a hybrid model")  # fmt: skip


@pytest.mark.parametrize(
    ("query", "kind", "words"),
    [
        (dict(fp8r="fp9"), "warning", "FP8 recipe (with fp8): "),
        (dict(moed="carrier-pigeon"), "warning", "MoE dispatcher: "),
        (dict(moed="deepep"), "error", "MoE dispatcher prices a mixture-of-experts exchange"),
        (dict(cg="2"), "warning", "CUDA graphs (1 = on): "),
        (dict(mtp="99"), "warning", "Multi-token prediction depth: "),
        (dict(etp="3"), "warning", "Expert tensor-parallel degrees: "),
        (dict(fsl="-1"), "warning", "Layers on the first stage: "),
        (dict(lsl="x"), "warning", "Layers on the last stage: "),
    ],
)  # fmt: skip
def test_bad_recipe_values_name_the_field(query: dict, kind: str, words: str) -> None:
    at = run_page(**query, **NARROW)
    assert_message(at, kind, words)
