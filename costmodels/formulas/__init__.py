"""Closed-form cost formulas, one module per technique; importing this registers them all."""

from costmodels.formulas import (
    collectives,
    compression,
    llm,
    local_sgd,
    parameter_server,
    recent,
    ring_allreduce,
    topk_sparsification,
)
from costmodels.nccl import formulas as nccl_formulas
from costmodels.registry import register

for _module in (ring_allreduce, parameter_server, topk_sparsification, local_sgd):
    register(_module.MODEL)
for _model in [*collectives.MODELS, *compression.MODELS, *llm.MODELS]:
    register(_model)
for _model in nccl_formulas.MODELS:  # NCCL's algorithms (costmodels/nccl)
    register(_model)
for _model in recent.MODELS:  # techniques after the surveys (costmodels/formulas/recent)
    register(_model)
