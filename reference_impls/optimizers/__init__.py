"""Communication-efficient optimizers: 1-bit Adam and local SGD (periodic model averaging)."""

from reference_impls.optimizers.local_sgd import LocalSGD
from reference_impls.optimizers.onebit_adam import OneBitAdam, pack_signs, unpack_signs

__all__ = ["LocalSGD", "OneBitAdam", "pack_signs", "unpack_signs"]
