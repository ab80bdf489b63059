"""The two clusters of a what-if, from what the trace records and what the user gives.

One place for ``commatlas what-if`` and the calculator's "Calibrate from a trace" page, so
that both ask for the same things and answer alike. A Kineto trace records its GPU
(``deviceProperties``) and its world size, but never the network it ran on, and its GPUs per
node only as the GPUs the trace lists. So:

- the traced GPU is the trace's own, else ``--trace-gpu``; it is needed (one line naming the
  input) when compute is rescaled for another GPU or communication is re-priced: the NCCL
  model needs the traced GPU's NVLink fabric;
- the traced network is ``--trace-inter``, never the new cluster's: pricing both sides on
  the same network would leave every ratio at 1. It is needed when a traced group spans nodes
  (what_if._model_seconds says which collective);
- the new cluster: ``--cluster`` (a preset) then ``--gpu``, ``--gpus``, ``--gpus-per-node``,
  ``--inter``, each defaulting to the traced value (the network to the traced one).
"""

from __future__ import annotations

from costmodels.calibration.trace.gpu_match import trace_gpu
from costmodels.calibration.trace.timeline import Timeline
from costmodels.calibration.trace.what_if import Cluster
from costmodels.hardware import get_gpu

#: the input names as the CLI spells them; the page passes its own labels
FLAGS = {
    "trace_gpu": "--trace-gpu",
    "trace_inter": "--trace-inter",
    "cluster": "--cluster",
}


def what_if_clusters(
    timeline: Timeline,
    *,
    trace_gpu_name: str | None = None,
    trace_inter: str | None = None,
    trace_per_node: int | None = None,
    gpu: str | None = None,
    gpus: int | None = None,
    per_node: int | None = None,
    inter: str | None = None,
    cluster: str | None = None,
    absolute: bool = False,
    names: dict[str, str] | None = None,
) -> tuple[Cluster, Cluster]:
    """(traced cluster, new cluster) as the module docstring says; ValueError naming the
    missing input."""
    label = {**FLAGS, **(names or {})}
    seen = trace_gpu(timeline)
    base_gpu = get_gpu(trace_gpu_name).name if trace_gpu_name else seen.preset
    world = timeline.world_size or 1
    traced_per_node = trace_per_node or max(len(timeline.device_properties), 1)
    base = Cluster(base_gpu, world, traced_per_node, trace_inter)
    preset = None
    if cluster:
        from costmodels.hardware.clusters import get_cluster

        try:
            preset = get_cluster(cluster)
        except ValueError as exc:
            raise ValueError(f"{label['cluster']}: {exc}") from None
    new_gpu = get_gpu(gpu).name if gpu else (preset.gpu if preset else base_gpu)
    new_per_node = per_node or (preset.gpus_per_node if preset else traced_per_node)
    new = Cluster(new_gpu, gpus or world, new_per_node, inter or trace_inter,
                  preset.name if preset else None)  # fmt: skip
    if base_gpu is None and (new_gpu is not None or new.gpus != world or absolute
                             or new.inter != trace_inter or preset):  # fmt: skip
        raise ValueError(
            f"{label['trace_gpu']} is needed: the trace does not name its GPU (no "
            "deviceProperties), and rescaling compute or re-pricing communication starts from it"
        )
    return base, new
