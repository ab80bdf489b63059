"""Gradient-compression cost models, one module per record.

``MODELS`` lists every CostModel defined in this package; costmodels.formulas registers them.
"""

from costmodels.formulas._lazy import lazy_family

#: the modules of this package, in the order of ``MODELS`` (imported on first use)
FAMILIES = (
    "gtopk",
    "random_k",
    "threshold_sparsification",
    "dgc",
    "qsgd",
    "terngrad",
    "signsgd",
    "ef_signsgd",
    "onebit_sgd",
    "onebit_adam",
    "powersgd",
    "fp16_comm",
)
__getattr__ = lazy_family(__name__, FAMILIES, globals())
