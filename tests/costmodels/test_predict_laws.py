"""Laws of whole-iteration predictions (issue 14): more bandwidth is never slower, and no number of
GPUs gives a scaling efficiency above 1, for every schedule, architecture, compressor and
framework preset (fixed costs included).

Hypothesis draws the method and the cluster; ``derandomize=True`` makes CI replay the same
examples on every run, and max_examples keeps the file to a few seconds. Tolerance: a relative
1e-9 on times that the schedules add up in different orders (far above rounding, far below any
real slow-down: the ByteScheduler anomaly this test found was 0.1-0.3%).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from costmodels.dp.predict import SCHEDULE_NAMES, Cluster, Method, predict
from costmodels.schedules.frameworks import framework_defaults
from costmodels.workloads import get_workload

COMPRESSORS = ("none", "fp16", "topk:0.01", "powersgd:4", "signsgd")
FRAMEWORKS = ("none", "horovod-0.19", "horovod", "pytorch-ddp", "bytescheduler", "byteps")
WORKLOADS = ("resnet50", "vgg16", "bert-base")
LAW = settings(max_examples=40, deadline=timedelta(seconds=10), derandomize=True)


@st.composite
def methods(draw) -> Method:
    architecture = draw(st.sampled_from(["allreduce", "ps"]))
    extra = framework_defaults(draw(st.sampled_from(FRAMEWORKS)))
    if architecture == "allreduce":
        extra.pop("ps_partition_bytes", None)
    return Method(
        architecture,
        draw(st.sampled_from(SCHEDULE_NAMES)),
        collective=draw(st.sampled_from(["ring", "hierarchical", "double-binary-tree"])),
        compression=draw(st.sampled_from(COMPRESSORS)),
        message_overhead_s=draw(st.sampled_from([0.0, 2e-5, 1e-3])),
        forward_overlap=draw(st.booleans()),
        overlap=draw(st.sampled_from([1.0, 0.5, 0.0])),
        **extra,
    )


@st.composite
def clusters(draw) -> Cluster:
    return Cluster(
        nodes=draw(st.integers(1, 16)),
        gpus_per_node=draw(st.sampled_from([1, 2, 4, 8])),
        intra_bandwidth_Bps=draw(st.floats(1e9, 1e12)),
        intra_latency_s=draw(st.floats(0, 2e-5)),
        inter_bandwidth_Bps=draw(st.floats(1e8, 1e11)),
        inter_latency_s=draw(st.floats(0, 1e-4)),
    )


def _iteration(workload: str, cluster: Cluster, method: Method) -> float:
    return predict(get_workload(workload), 32, 0.3, cluster, method).iteration_time_s


@LAW
@given(workload=st.sampled_from(WORKLOADS), cluster=clusters(), method=methods(),
       factor=st.sampled_from([2.0, 10.0]))  # fmt: skip
def test_more_bandwidth_is_never_slower(workload, cluster, method, factor) -> None:
    base = _iteration(workload, cluster, method)
    for faster in (
        replace(cluster, inter_bandwidth_Bps=cluster.inter_bandwidth_Bps * factor),
        replace(cluster, intra_bandwidth_Bps=cluster.intra_bandwidth_Bps * factor),
    ):
        # MG-WFBP plans with its own model (comm + the per-message cost) and is then priced by
        # the schedule with every fixed cost: on a faster link it may pick a plan that its
        # planning model ties with the old one and the schedule prices a hair slower (seen:
        # 3e-10 s of 0.33 s, vgg16, 1 ms per message); relative 1e-6 is far below any meaning
        slack = 1e-6 if method.schedule == "mg-wfbp" else 1e-9
        assert _iteration(workload, faster, method) <= base * (1 + slack), (method.label, faster)


@LAW
@given(workload=st.sampled_from(WORKLOADS), cluster=clusters(), method=methods())
def test_scaling_efficiency_never_exceeds_one(workload, cluster, method) -> None:
    for nodes in (cluster.nodes, 2 * cluster.nodes):
        result = predict(get_workload(workload), 32, 0.3, replace(cluster, nodes=nodes), method)
        assert 0 < result.scaling_efficiency <= 1 + 1e-12, (method.label, nodes)
        assert result.iteration_time_s >= result.compute_s


def test_the_bytescheduler_case_of_issue_14() -> None:
    """Doubling the inter-node bandwidth made ByteScheduler + PowerSGD (and signSGD) slightly
    slower before its credit rule was made monotone; ResNet-50 on 16 x 8 GPUs did too."""
    for workload, compression, nodes, gpus in [
        ("bert-base", "powersgd:4", 4, 8), ("bert-base", "signsgd", 8, 4),
        ("resnet50", "none", 16, 8), ("resnet50", "fp16", 16, 8),
    ]:  # fmt: skip
        method = Method("allreduce", "bytescheduler", compression=compression)
        for bandwidth in (1e9, 1e10, 1.25e10, 1e11):
            slow = Cluster(nodes, gpus, 100e9, 2e-6, bandwidth, 5e-6)
            fast = replace(slow, inter_bandwidth_Bps=2 * bandwidth)
            assert _iteration(workload, fast, method) <= _iteration(workload, slow, method)
