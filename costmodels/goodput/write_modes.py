"""What one checkpoint costs in each way of writing it, and what each way blocks.

Three ways, each reduced to three times (seconds) that the interval and goodput models take:

- ``blocking_s``: training stops for this long per checkpoint (Daly's delta);
- ``persist_s``: after the blocking part, this long passes before the checkpoint survives a
  failure; a failure inside that window falls back to the previous checkpoint, so on average it
  redoes that much more work (it is added to the restart, see :mod:`costmodels.goodput.goodput`);
- ``load_s``: reading the checkpoint back after a failure (added to the restart time).

The modes:

``sync`` (``torch.save`` from the training loop): training waits until every byte is on the
  storage: ``blocking_s`` = latency + the slower of the whole checkpoint at the storage's
  aggregate write bandwidth and the busiest node's bytes at one node's storage bandwidth.
``async`` (CheckFreq, Mohan et al., FAST'21: snapshot, then persist in the background): the copy
  of the busiest GPU's bytes to host memory over its PCIe link runs beside the next step's
  forward and backward (``overlap_s``) and must end before that step's weight update, so
  training waits only for the excess, max(0, snapshot - overlap_s) (CheckFreq's
  ``weight_update`` spins until the snapshot is done, then calls ``optimizer.step()``:
  msr-fiddle/CheckFreq src/cf_manager.py); the write to storage (the ``sync`` time) runs behind
  training and must end before the next snapshot. ``overlap_s`` = 0 (the step time unknown)
  charges the whole copy.
``in-memory`` (GEMINI, Wang et al., SOSP'23: checkpoints in the CPU memory of other machines):
  the same host snapshot blocks; the busiest node's bytes then travel to a peer node over the
  training network (per node: GPUs per node x per-GPU network bandwidth), and a restarted job
  reads them back from that peer the same way. Losing both copies (the fallback to remote
  storage) is not modelled.

Reads run at the write bandwidths (stated as an assumption; file systems often read faster).
Every cost is O(1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from costmodels.goodput.checkpoint_size import CheckpointSize

Mode = Literal["sync", "async", "in-memory"]
MODES: tuple[Mode, ...] = ("sync", "async", "in-memory")
BLOCKS = {
    "sync": "training waits for the whole write to storage",
    "async": "training waits for what of the GPU-to-host snapshot outlasts the next step's "
    "forward and backward; the write to storage runs behind it",
    "in-memory": "training waits for the GPU-to-host snapshot; the copy to a peer's memory runs "
    "behind it",
}


@dataclass(frozen=True)
class Bandwidths:
    """Where checkpoints go, in bytes per second (one direction)."""

    storage_Bps: float  # aggregate write bandwidth of the file system the job can use
    node_storage_Bps: float  # one node's path to that storage (front-end NICs)
    host_Bps: float  # one GPU's copy to host memory (its PCIe link)
    peer_Bps: float  # one node's network bandwidth to another node (in-memory mode)
    storage_latency_s: float = 0.0  # fixed cost per checkpoint (open, metadata, barrier)

    def __post_init__(self) -> None:
        for name in ("storage_Bps", "node_storage_Bps", "host_Bps", "peer_Bps"):
            value = getattr(self, name)
            if not 0 < value < float("inf"):
                raise ValueError(f"{name} must be positive and finite, got {value!r}")
        if not 0 <= self.storage_latency_s < float("inf"):
            raise ValueError(f"storage_latency_s must be >= 0, got {self.storage_latency_s!r}")


@dataclass(frozen=True)
class CheckpointCost:
    """Seconds one checkpoint costs in one mode (module docstring)."""

    mode: Mode
    blocking_s: float
    persist_s: float
    load_s: float
    blocks: str


def storage_write_s(size: CheckpointSize, bw: Bandwidths) -> float:
    """Latency + the slower of the aggregate storage bandwidth and the busiest node's link."""
    aggregate = size.total_bytes / bw.storage_Bps
    node = size.busiest_node_bytes / bw.node_storage_Bps
    return bw.storage_latency_s + max(aggregate, node)


def checkpoint_cost(
    size: CheckpointSize, mode: Mode, bw: Bandwidths, overlap_s: float = 0.0
) -> CheckpointCost:
    """The blocking, persist and load times of one checkpoint written in ``mode``.

    ``overlap_s``: compute the ``async`` snapshot runs beside (the next step's forward and
    backward, before its weight update); the other modes ignore it.
    """
    if not 0 <= overlap_s < float("inf"):
        raise ValueError(f"overlap_s must be >= 0 and finite, got {overlap_s!r}")
    storage = storage_write_s(size, bw)
    snapshot = size.busiest_gpu_bytes / bw.host_Bps
    if mode == "sync":
        return CheckpointCost(mode, storage, 0.0, storage, BLOCKS[mode])
    if mode == "async":
        return CheckpointCost(mode, max(0.0, snapshot - overlap_s), storage, storage, BLOCKS[mode])
    if mode == "in-memory":
        peer = size.busiest_node_bytes / bw.peer_Bps
        return CheckpointCost(mode, snapshot, peer, peer, BLOCKS[mode])
    raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
