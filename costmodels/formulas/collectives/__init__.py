"""Collective-communication cost models (alpha-beta-gamma), one module per record.

``MODELS`` lists every CostModel defined in this package; costmodels.formulas registers them.
"""

from costmodels.model import CostModel

MODELS: list[CostModel] = []
