"""Cost models for large-model training: shapes, FLOPs, memory, communication, pipelines, planner.

See costmodels/llm/shapes.py for the three inputs every function takes: the transformer's shape,
the parallel layout and the cluster. The step time is an operator model (step.py): the kernels
of a layer (layer_ops.py, attention.py, edge_ops.py; fusion per framework in frameworks.py),
timed by kernel_time.py and gemm.py with the constants of constants.py (fitted by
fit_constants.py on the dev data of vtrain_data.py and megatron_table.py), optionally replaced
by a measured operator table (operator_table.py) or calibrated on one measured step
(calibrate_step.py).
"""
