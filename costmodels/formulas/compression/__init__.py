"""Gradient-compression cost models, one module per record.

``MODELS`` lists every CostModel defined in this package; costmodels.formulas registers them.
"""

from costmodels.formulas.compression import (
    dgc,
    ef_signsgd,
    fp16_comm,
    gtopk,
    onebit_adam,
    onebit_sgd,
    powersgd,
    qsgd,
    random_k,
    signsgd,
    terngrad,
    threshold_sparsification,
)
from costmodels.model import CostModel

MODELS: list[CostModel] = [
    module.MODEL
    for module in (
        gtopk,
        random_k,
        threshold_sparsification,
        dgc,
        qsgd,
        terngrad,
        signsgd,
        ef_signsgd,
        onebit_sgd,
        onebit_adam,
        powersgd,
        fp16_comm,
    )
]
