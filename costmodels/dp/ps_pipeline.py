"""A partitioned, pipelined parameter server (BytePS): stream time and delivery latency.

BytePS (Y. Jiang et al., 'A Unified Architecture for Accelerating Distributed DNN Training in
Heterogeneous GPU/CPU Clusters', OSDI 2020) cuts every tensor into partitions of
``BYTEPS_PARTITION_BYTES`` (default 4,096,000 bytes: byteps/common/global.cc,
``_partition_bytes = 4096000``) and runs each partition through a pipeline of stages: the GPUs
of a node reduce it locally, the node pushes it to one server (partitions are spread over the S
servers), the server sums the W workers' copies and every worker pulls the sum back, then the
node broadcasts it locally. Different partitions are in different stages at once, and a NIC
pushes one partition while it pulls another (full duplex). Two numbers follow for a message of
n bytes on W worker nodes of g GPUs:

- stream time (what the next message waits for): the busiest link's bytes in one direction at
  its bandwidth, n * max(1, W / S) * beta for servers on their own machines (a worker sends n,
  a server receives W n / S) and (n + (W - 2) n / S) * beta when every node also hosts a server
  (its own shard stays local), or the local reduce-scatter + all-gather if that is slower;
- delivery latency (the pipeline's drain, while the stream already carries the next message):
  the last partition, q = min(n, partition), still has to be pushed by all W workers into one
  server, W q beta on that server's link, and to pass the local stages once:
  2 alpha + W q beta + local(q).

So a whole iteration costs about n beta + W q beta: a BSP message of n bytes takes n beta plus
one partition round, not the 2 n beta of push then pull. With one worker node BytePS does not
start its distributed mode (``_is_distributed_job = _num_worker > 1``, global.cc) and only the
local reduction runs.

This stream + delivery pipeline still prices BytePS under the schedules that fuse or partition
(fusion, MG-WFBP, ByteScheduler, local SGD) and on one machine. BSP and WFBP on several machines
are priced partition by partition by costmodels.dp.ps_pull_queue (issue 43), because ps-lite's
ZeroMQ van sends a worker's pull requests on the same connection as its queued pushes: a BSP
exchange then does take nearly 2 n beta, which this pipeline had absorbed into a fitted link of
half the port's rate (0.634 GB/s per node on Shi et al.'s 10GbE; 1.114 GB/s with
ps_pull_queue, beside NCCL's 1.150 GB/s on the same port).

Servers are taken as evenly loaded (each receives W n / S). BytePS places each partition on one
server by a hash of its key (global.cc ``EncodeDefaultKey``: default ``BYTEPS_KEY_HASH_FN``
djb2 over the key's decimal digits; key = the tensor's declaration index << 16 + the partition
index, operations.cc; 4,096,000-byte partitions stay 4,096,000 after the round-up to 4 GPUs x
4 KiB pages). Computed that way for Shi et al.'s runs (names declared in sorted order, as
ddl-benchmarks' byteps_distributed_optimizer.py does), the busiest server carries up to 1.6x
its share (ResNet-50 layer-wise on 8 servers) and the one fused BSP tensor less; priced as a
per-run factor on the server links it moved the 10GbE leave-one-DNN-out MAPE from 5.5 % to
6.3 % (ResNet-50 WFBP-PS at 16 and 32 GPUs 11-14 % too slow), so it is not used (issue 43;
the hash reads a string whose buffer is already freed in that code, another reason not to lean
on its exact placement).
"""

from __future__ import annotations

import costmodels

Link = dict[str, float]  # alpha, beta, alpha_intra, beta_intra, gamma (cost-model symbols)


def local_seconds(nbytes: float, gpus_per_node: int, link: Link) -> float:
    """Reduce-scatter then all-gather of ``nbytes`` among the GPUs of one node (ring)."""
    if gpus_per_node <= 1 or nbytes <= 0:
        return 0.0
    values = dict(p=gpus_per_node, n=nbytes, alpha=link["alpha_intra"], beta=link["beta_intra"],
                  gamma=link["gamma"])  # fmt: skip
    scatter = costmodels.get("reduce-scatter").evaluate("ring", **values)
    gather = costmodels.get("allgather").evaluate("ring", **values)
    return float(scatter) + float(gather)


def busiest_bytes(nbytes: float, workers: int, servers: int, colocated: bool) -> float:
    """Bytes the busiest NIC carries in one direction for one message."""
    shard = nbytes / servers
    if colocated:
        return nbytes + (workers - 2) * shard if workers > 1 else 0.0
    return max(nbytes, workers * shard)


def stream_seconds(
    nbytes: float, workers: int, gpus_per_node: int, servers: int, colocated: bool, link: Link
) -> float:
    """Seconds a message of ``nbytes`` holds the pipeline (module docstring)."""
    local = local_seconds(nbytes, gpus_per_node, link)
    if workers <= 1:
        return local
    wire = busiest_bytes(nbytes, workers, servers, colocated) * link["beta"]
    summation = (workers - 1) * nbytes / servers * link["gamma"]  # servers add W shards
    return max(wire, local, summation)


def delivery_seconds(
    nbytes: float, workers: int, gpus_per_node: int, partition_bytes: float, link: Link
) -> float:
    """The pipeline's drain after a message's stream time (module docstring)."""
    if workers <= 1 or nbytes <= 0:
        return 0.0
    last = min(nbytes, partition_bytes)
    return 2 * link["alpha"] + workers * last * link["beta"] + local_seconds(last, gpus_per_node,
                                                                             link)  # fmt: skip
