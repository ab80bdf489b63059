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
from costmodels.goodput import formulas as goodput_formulas
from costmodels.nccl import formulas as nccl_formulas
from costmodels.registry import register
from costmodels.serving import formulas as serving_formulas
from costmodels.stragglers import formulas as straggler_formulas

for _module in (ring_allreduce, parameter_server, topk_sparsification, local_sgd):
    register(_module.MODEL)
for _model in [*collectives.MODELS, *compression.MODELS, *llm.MODELS]:
    register(_model)
for _model in nccl_formulas.MODELS:  # NCCL's algorithms (costmodels/nccl)
    register(_model)
for _model in recent.MODELS:  # techniques after the surveys (costmodels/formulas/recent)
    register(_model)
for _model in goodput_formulas.MODELS:  # failures and checkpoints (costmodels/goodput)
    register(_model)
for _model in serving_formulas.MODELS:  # serving: KV-cache transfer (costmodels/serving)
    register(_model)
for _model in straggler_formulas.MODELS:  # BSP and backup workers (costmodels/stragglers)
    register(_model)
