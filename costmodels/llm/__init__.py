"""Cost models for large-model training: shapes, FLOPs, memory, communication, pipelines, planner.

See costmodels/llm/shapes.py for the three inputs every function takes: the transformer's shape,
the parallel layout and the cluster. The step time is an operator model (step.py): the kernels
of a layer (layer_ops.py, linear_shapes.py, attention.py, edge_ops.py; fusion per framework in
frameworks.py, fp8 recipes in fp8_recipes.py), layer kinds and pipeline stages (layer_kinds.py,
stage_times.py), timed by kernel_time.py and gemm.py with the constants of constants.py (fitted
by fit_constants.py on the dev data of vtrain_data.py, megatron_table.py and dev_runs.py),
optionally replaced by a measured operator table (operator_table.py) or calibrated on one
measured step (calibrate_step.py). Communication: communication.py (the TP collectives one by
one: tp_schedule.py), ZeRO-3/FSDP2's block schedule fsdp.py / dp_exposure.py, async TP
async_tp.py, DeepSeek-style expert dispatch moe_dispatch.py; the framework knobs recipe.py;
power caps power.py; memory memory.py, activations.py, runtime_memory.py; how sure a
prediction is error_bands.py (dev_validation.py computes the bands).
"""
