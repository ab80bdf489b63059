"""Closed-form pieces of large-model training: TP/SP activations, pipeline overhead, ZeRO/FSDP.

``MODELS`` lists every CostModel here; costmodels.formulas registers them. The full step model
(costmodels/llm/) combines these with FLOPs, memory and placement.
"""

from costmodels.formulas.llm import pipeline, sharded_data_parallel, tensor_parallel

MODELS = [*tensor_parallel.MODELS, *pipeline.MODELS, *sharded_data_parallel.MODELS]
