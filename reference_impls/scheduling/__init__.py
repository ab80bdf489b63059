"""Communication scheduling: when, and in which pieces, gradients go during backward.

One module per method, all on the same swappable collective (``comm``): wait-free backprop
(``wfbp``), tensor fusion (``tensor_fusion``), MG-WFBP's planned merging (``mg_wfbp``) and
ByteScheduler's partitioned priority scheduling (``bytescheduler``). Importing the package
registers every entry point.
"""

from reference_impls.scheduling.buckets import BucketedAllReduce
from reference_impls.scheduling.bytescheduler import ByteScheduler
from reference_impls.scheduling.comm import (
    CommRecord,
    Launcher,
    RingAllReduceThread,
    torch_allreduce,
)
from reference_impls.scheduling.mg_wfbp import (
    MergedGradientWFBP,
    layers_in_ready_order,
    merge_plan,
)
from reference_impls.scheduling.tensor_fusion import TensorFusion
from reference_impls.scheduling.wfbp import WaitFreeBackprop

__all__ = [
    "BucketedAllReduce",
    "ByteScheduler",
    "CommRecord",
    "Launcher",
    "MergedGradientWFBP",
    "RingAllReduceThread",
    "TensorFusion",
    "WaitFreeBackprop",
    "layers_in_ready_order",
    "merge_plan",
    "torch_allreduce",
]
