"""Closed-form cost formulas, one module per technique family; ``MODELS`` lists every one.

The registry (costmodels/registry.py, the room above) keys them by record id on first use;
nothing here imports it, so the two never import each other.
"""

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
from costmodels.formulas import goodput as goodput_formulas
from costmodels.formulas import nccl as nccl_formulas
from costmodels.formulas import serving as serving_formulas
from costmodels.formulas import stragglers as straggler_formulas
from costmodels.model import CostModel

MODELS: list[CostModel] = [
    *(family.MODEL for family in (ring_allreduce, parameter_server, topk_sparsification,
                                  local_sgd)),
    *collectives.MODELS,
    *compression.MODELS,
    *llm.MODELS,
    *nccl_formulas.MODELS,  # NCCL's algorithms (costmodels/nccl)
    *recent.MODELS,  # techniques after the surveys (costmodels/formulas/recent)
    *goodput_formulas.MODELS,  # failures and checkpoints (costmodels/goodput)
    *serving_formulas.MODELS,  # serving: KV-cache transfer (costmodels/serving)
    *straggler_formulas.MODELS,  # BSP and backup workers (costmodels/stragglers)
]
