"""NCCL's collectives as NCCL runs them: algorithms, protocols, channels, NICs and its tuner.

The model restates NVIDIA NCCL's own performance model (src/graph/tuning.cc, search.cc,
topo.cc, src/enqueue.cc; constants in :mod:`costmodels.nccl.constants`) over the topology of
:mod:`costmodels.nccl.fabrics` and the cluster of :mod:`costmodels.nccl.system`:

* :func:`cluster_system`: an :class:`NcclSystem` from a cluster preset (costmodels/hardware/
  clusters.py) and overrides; the transports NCCL's traffic takes are :mod:`.transports`;
* :func:`system_from_cluster`, :func:`system_from_predict_cluster`: build an :class:`NcclSystem`
  (per-GPU intra-node bandwidth, per-NIC bandwidth x NICs per node, explicit in every name);
  a cluster profile's measurements calibrate it in
  :func:`costmodels.calibration.nccl_from_profile.system_from_profile` (a room above this one);
* :func:`collective_time`: NCCL's (algorithm, protocol) choice on NCCL's own view of the system,
  then that pair's time on the realised one, algbw and busbw per size;
* :func:`allreduce_seconds`, :func:`collective_seconds`: the same for one size in a few us.

The sympy forms are the cost models ``nccl``, ``nvls`` and ``pat``
(:mod:`costmodels.formulas.nccl`).

Example::

    >>> from costmodels.nccl import allreduce_seconds, system_from_cluster
    >>> dgx = system_from_cluster(gpu="a100-80gb", gpus_per_node=8, nodes=4,
    ...                           inter="InfiniBand HDR", nics_per_node=8)
    >>> round(allreduce_seconds(dgx, 1e9) * 1e3, 1)  # ms for a 1 GB all-reduce on 32 GPUs
    11.2
"""

from costmodels.nccl.builders import system_from_cluster, system_from_predict_cluster
from costmodels.nccl.fast import allreduce_seconds, collective_seconds
from costmodels.nccl.presets import cluster_system
from costmodels.nccl.system import NcclSystem
from costmodels.nccl.tuner import CollectiveEstimate, candidate_times, collective_time

__all__ = [
    "CollectiveEstimate",
    "NcclSystem",
    "allreduce_seconds",
    "candidate_times",
    "cluster_system",
    "collective_seconds",
    "collective_time",
    "system_from_cluster",
    "system_from_predict_cluster",
]
