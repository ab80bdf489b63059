"""Issue 43: the mechanisms added to price Shi et al.'s seven methods, each against a hand
computation (MG-WFBP's greedy merge rule, the single-node overlap fit)."""

from __future__ import annotations

import pytest

from costmodels.dp.validation_overlap import OVERLAP_GRID, fit_overlap
from costmodels.dp.validation_rows import Row
from costmodels.gradients import Gradient
from costmodels.schedules.mg_wfbp import mg_wfbp
from costmodels.schedules.mg_wfbp_shi import shi_merge_plan


def _names(groups: list[list[Gradient]]) -> list[list[str]]:
    return [[g.name for g in group] for group in groups]


def test_greedy_merge_by_hand() -> None:
    """alpha = 1 ms, beta = 1 ns/byte. a (1 MB, ready 0): planned 2 ms, b ready at 1 ms, before
    a's end, and a starts at 0 < 1 ms with a wait of 1 ms, not below alpha: a goes alone.
    b (1 MB, ready 1 ms): starts at max(0 + 2, 1) = 2 ms > c's ready 1.5 ms: merged into c.
    c (now 2 MB, ready 1.5 ms): starts 2 ms, ends 5 ms; d is ready at 10 ms: c's group closes.
    d (30 kB = 7,500 values, ready 10 ms) is below 8,192 values: merged into the last tensor e."""
    grads = [Gradient("a", 1e6, 0.0), Gradient("b", 1e6, 1e-3), Gradient("c", 1e6, 1.5e-3),
             Gradient("d", 3e4, 10e-3), Gradient("e", 1e6, 20e-3)]  # fmt: skip
    assert _names(shi_merge_plan(grads, 1e-3, 1e-9)) == [["a"], ["b", "c"], ["d", "e"]]


def test_greedy_merge_keeps_every_tensor_once_and_in_order() -> None:
    grads = [Gradient(f"t{i}", 1e5 * (i % 3 + 1), i * 1e-4) for i in range(40)]
    groups = shi_merge_plan(grads, 5e-4, 1e-9)
    assert [g for group in groups for g in group] == grads
    assert shi_merge_plan([], 1e-3, 1e-9) == []


def test_greedy_plan_is_priced_on_the_real_link() -> None:
    """Two 1 MB tensors merged by the plan (b ready before a could start) travel as one message
    of comm(2 MB) = 1 + 2 = 3 s after b is ready at 1 s: forward 1 + backward 2 = 3, comm from
    1 + 1 = 2 s to 5 s: the iteration ends at 5 s."""
    grads = [Gradient("a", 1e6, 0.5), Gradient("b", 1e6, 1.0)]
    result = mg_wfbp(grads, 1.0, 2.0, lambda n: 1 + n / 1e6, greedy_alpha_beta=(10.0, 0.0))
    assert result.iteration_time_s == pytest.approx(5.0)


def _row(gpus: int, measured: float) -> Row:
    return Row("BERT-Base", 64, "10GbE with TCP/IP", "WFBP-A2A", gpus, measured, 212.8)


def test_overlap_fit_picks_the_grid_value_that_explains_the_rows(monkeypatch) -> None:
    """A stand-in prediction whose iteration time is 1 / overlap seconds: a row measured at
    64 * 4 / 2 samples/s (2 s) is explained exactly by overlap 0.5; no rows keep 1."""
    import costmodels.dp.validation_overlap as module

    monkeypatch.setattr(module, "predicted_iteration_s",
                        lambda row, link, allreduce: 1 / link["intra_overlap"])  # fmt: skip
    assert fit_overlap([_row(4, 128.0)], lambda r: {}, "nccl-ring") == 0.5
    assert fit_overlap([], lambda r: {}, "nccl-ring") == 1.0
    assert OVERLAP_GRID[0] == 1.0 and min(OVERLAP_GRID) > 0


@pytest.mark.parametrize(
    ("network", "tcp", "transport", "latency"),
    [
        ("10GbE with TCP/IP", True, "socket", 30e-6),
        ("100GbIB with TCP/IP", True, "socket", 30e-6),  # IPoIB: the kernel stack, not 2 us
        ("100GbIB with RDMA", False, "ib", 2e-6),
        ("100GbE with RDMA", False, "roce", None),  # RoCE: its preset
        ("25 GbE", True, "socket", 30e-6),  # plain Ethernet: NCCL uses sockets
    ],
)  # fmt: skip
def test_tcp_regime_by_name(network: str, tcp: bool, transport: str, latency) -> None:
    from costmodels.dp.tcp_regime import inter_latency_s, nccl_transport, uses_tcp
    from costmodels.dp.validation_networks import network_link

    assert uses_tcp(network) == tcp and nccl_transport(network) == transport
    expected = network_link(network).latency_s if latency is None else latency
    assert inter_latency_s(network) == pytest.approx(expected)


def test_a_tcp_table_over_infiniband_calibrates_with_the_kernel_latency(tmp_path) -> None:
    """Made-up rows (not the kept 100 Gb/s ones): the fit of an IPoIB table carries the 30 us
    TCP step, the same table 'with RDMA' the 2 us RDMA hop."""
    from costmodels.dp.validation import calibrate, read_rows

    header = ("dnn,batch_per_gpu,network,method,gpus,throughput_mean,throughput_std,single_gpu,"
              "scaling_eff\n")  # fmt: skip
    for network, alpha in (("100GbIB with TCP/IP", 30e-6), ("100GbIB with RDMA", 2e-6)):
        data = tmp_path / "runs.csv"
        data.write_text(header + f"ResNet-50,64,{network},BSP-A2A,8,1500,1,253.1,0\n")
        assert calibrate(read_rows(data), network).alpha == pytest.approx(alpha)


def test_plugin_overhead_is_the_median_excess_by_hand(monkeypatch) -> None:
    """Stand-in predictions of 1 s: rows measured at 1.05, 1.10 and 1.30 s per iteration take
    0.05, 0.10 and 0.30 s more; the median, 0.10 s, is the fitted cost. Rows faster than
    predicted give 0 (a cost is never negative); no rows give 0."""
    import costmodels.dp.validation_plugin as module

    monkeypatch.setattr(module, "predicted_iteration_s", lambda row, link, allreduce: 1.0)

    def row(seconds: float) -> Row:  # 4 GPUs x 64 samples in ``seconds``
        return Row("BERT-Base", 64, "10GbE with TCP/IP", "ByteScheduler-A2A", 4, 256 / seconds,
                   212.8)  # fmt: skip

    rows = [row(1.05), row(1.10), row(1.30)]
    assert module.fit_plugin_overhead(rows, lambda r: {}, "nccl-ring") == pytest.approx(0.10)
    assert module.fit_plugin_overhead([row(0.9)], lambda r: {}, "nccl-ring") == 0.0
    assert module.fit_plugin_overhead([], lambda r: {}, "nccl-ring") == 0.0
    assert module.plugin_rows(rows, "10GbE with TCP/IP") == rows
    assert module.plugin_rows(rows, "25 GbE") == []
