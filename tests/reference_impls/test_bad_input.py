"""Ranks that disagree, and ranks that die: a clear error or a bounded failure, never a hang.

With ``COMMATLAS_CHECKS=1``, :func:`reference_impls.comm.checks.check_same_layout` (which
ring_allreduce, the other collectives, allreduce_compressed and ps_push_pull call first) raises the
same ValueError on every rank, naming the function, the ranks and what differs, before any
message goes out; without the variable it does nothing and sends nothing. Without the check,
mismatched shapes or dtypes fed to those three functions must end in a DistributedTestError (a
rank aborts on a size mismatch, or the gloo timeout fires) within the timeout, and a rank that
exits mid-collective must be reported with its exit code. Short timeouts (10 s) keep this fast.
Also: ``aggregate_gradients`` refuses bad arguments (one clear error naming the argument).
"""

from __future__ import annotations

import os
import time

import pytest
import torch

from reference_impls.collectives import ring_allreduce
from reference_impls.comm.checks import ENV_VAR, check_same_layout, checks_enabled, layout_row
from reference_impls.compression import TopK, allreduce_compressed
from reference_impls.compression.adapters import _buckets, aggregate_gradients
from reference_impls.parameter_server import ps_push_pull
from reference_impls.testing import DistributedTestError, run_distributed

TIMEOUT_S = 10.0
FUNCTIONS = {
    "ring_allreduce": lambda x: ring_allreduce(x),
    "allreduce_compressed": lambda x: allreduce_compressed(x, TopK(ratio=0.5)),
    "ps_push_pull": lambda x: ps_push_pull(x, num_servers=1, placement="colocated"),
}


def mismatched(rank: int, kind: str) -> torch.Tensor:
    """Rank 1 disagrees: one more element ("shape") or float64 instead of float32 ("dtype")."""
    if kind == "shape":
        return torch.ones(10 + (rank == 1))
    return torch.ones(10, dtype=torch.float64 if rank == 1 else torch.float32)


def checks_worker(rank: int, world: int) -> dict[str, str]:
    out = {}
    os.environ.pop(ENV_VAR, None)
    # Off: returns at once, sends nothing, even though the layouts differ.
    check_same_layout(mismatched(rank, "shape"), None, "ring_allreduce")
    out["off"] = "returned"
    os.environ[ENV_VAR] = "1"
    check_same_layout(torch.ones(2, 3), None, "ring_allreduce")  # equal layouts pass
    out["equal"] = "returned"
    cases = {
        "dims": torch.ones(6) if rank == 0 else torch.ones(2, 3),  # same numel, other shape
        "dtype-same-bytes": torch.ones(2) if rank else torch.ones(1, dtype=torch.float64),
    }
    for name, fn in FUNCTIONS.items():
        for kind in ("shape", "dtype"):
            cases[f"{name}/{kind}"] = (name, fn, mismatched(rank, kind))
    for label, case in cases.items():
        if isinstance(case, torch.Tensor):
            case = ("ring_allreduce", ring_allreduce, case)
        what, fn, tensor = case
        try:
            fn(tensor)  # the entry point runs the check itself, before any message
            out[label] = "no error"
        except ValueError as error:
            out[label] = str(error)
    try:
        check_same_layout([1.0], None, "ring_allreduce")  # type: ignore[arg-type]
    except TypeError as error:
        out["not-a-tensor"] = str(error)
    return out


def test_checks_raise_the_same_clear_error_on_every_rank() -> None:
    per_rank = run_distributed(checks_worker, 3, timeout_s=TIMEOUT_S)
    assert all(r == per_rank[0] for r in per_rank), "ranks raised different errors"
    out = per_rank[0]
    assert out["off"] == out["equal"] == "returned"
    for name in FUNCTIONS:
        shape, dtype = out[f"{name}/shape"], out[f"{name}/dtype"]
        assert shape.startswith(f"{name}: ranks of the group passed tensors of different layout")
        assert "shape differs: (10,) on ranks [0, 2] vs (11,) on ranks [1]" in shape
        assert "numel differs: 10 on ranks [0, 2] vs 11 on ranks [1]" in shape
        assert "dtype differs: torch.float32 on ranks [0, 2] vs torch.float64 on ranks [1]" in dtype
    assert "shape differs: (6,) on ranks [0] vs (2, 3) on ranks [1, 2]" in out["dims"]
    assert "numel" not in out["dims"]
    assert "dtype differs" in out["dtype-same-bytes"] and "shape differs" in out["dtype-same-bytes"]
    assert out["not-a-tensor"] == "ring_allreduce: tensor must be a torch.Tensor, got list"


def test_checks_enabled_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for value, expected in [("1", True), ("true", True), ("ON", True), ("0", False), ("", False)]:
        monkeypatch.setenv(ENV_VAR, value)
        assert checks_enabled() is expected, value
    monkeypatch.delenv(ENV_VAR)
    assert not checks_enabled()


def test_layout_row_encodes_shape_and_dtype() -> None:
    a, b = layout_row(torch.ones(2, 3)), layout_row(torch.ones(3, 2))
    assert a[0] == b[0] == 6 and a[2] == b[2] == 2
    assert a[3] != b[3]  # the shape digest tells (2, 3) from (3, 2)
    assert a[4:6] == [2, 3] and a[6:] == [-1] * 4
    assert layout_row(torch.ones(1, dtype=torch.float16))[1] != layout_row(torch.ones(1))[1]


def unchecked_worker(rank: int, world: int, name: str, kind: str) -> None:
    os.environ.pop(ENV_VAR, None)
    FUNCTIONS[name](mismatched(rank, kind))


@pytest.mark.parametrize("kind", ["shape", "dtype"])
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_mismatch_without_checks_fails_within_the_timeout(name: str, kind: str) -> None:
    start = time.monotonic()
    with pytest.raises(DistributedTestError):
        run_distributed(unchecked_worker, 2, name, kind, timeout_s=TIMEOUT_S)
    # run_distributed allows 30 s of start-up on top of the timeout; a hang would exceed it.
    assert time.monotonic() - start < TIMEOUT_S + 30


def dying_worker(rank: int, world: int) -> None:
    if rank == 1:
        os._exit(3)  # dies without a word, as a crashed or OOM-killed rank would
    # Rank 0 stands for a rank stuck for good (in a collective, gloo would see the reset socket
    # and fail by itself, racing the exit code): the parent must not wait for it.
    time.sleep(600)


def test_a_dying_rank_is_reported_with_its_exit_code() -> None:
    start = time.monotonic()
    with pytest.raises(DistributedTestError, match=r"exit codes \{1: 3\}"):
        run_distributed(dying_worker, 2, timeout_s=TIMEOUT_S)
    assert time.monotonic() - start < TIMEOUT_S + 30


def test_aggregate_gradients_rejects_bad_arguments() -> None:
    model, compressor = torch.nn.Linear(2, 2), TopK(ratio=0.5)
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        aggregate_gradients([torch.ones(2)], compressor)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="compressor must be a Compressor, got str"):
        aggregate_gradients(model, "topk")  # type: ignore[arg-type]
    for bad in (0, -5, 1.5, True):
        with pytest.raises(ValueError, match="bucket_bytes must be a positive int or None"):
            aggregate_gradients(model, compressor, bucket_bytes=bad)  # type: ignore[arg-type]
    embedding = torch.nn.Embedding(4, 2, sparse=True)
    embedding(torch.tensor([1])).sum().backward()
    with pytest.raises(TypeError, match="parameter 'weight' has a sparse gradient"):
        aggregate_gradients(embedding, compressor)


def test_buckets_keep_dtype_and_size_limits() -> None:
    """Consecutive gradients share a bucket while dtype matches and bytes fit; a gradient larger
    than the limit gets a bucket of its own (the adapter's _buckets, checked without ranks)."""
    grads = [
        ("a", torch.zeros(3)),  # 12 bytes
        ("b", torch.zeros(2)),  # 8: a + b = 20 <= 24
        ("c", torch.zeros(2)),  # 8: 28 > 24, new bucket
        ("d", torch.zeros(2, dtype=torch.float64)),  # other dtype, new bucket
        ("e", torch.zeros(10)),  # 40 > 24 alone
        ("f", torch.zeros(1)),
    ]
    buckets = [[name for name, _ in bucket] for bucket in _buckets(grads, 24)]
    assert buckets == [["a", "b"], ["c"], ["d"], ["e"], ["f"]]


def test_collectives_without_a_process_group_say_so_in_one_line() -> None:
    """Issue 17, item 12: one clear ValueError naming the function, not torch's traceback from
    inside get_world_size (no process group exists in the pytest process itself)."""
    import torch.distributed as dist

    from reference_impls import collectives

    assert not dist.is_initialized()
    x = torch.ones(8)
    calls = {name: (getattr(collectives, name), (x,)) for name in collectives.__all__}
    calls["pairwise_alltoall"] = (collectives.pairwise_alltoall, (torch.empty(8), x))
    calls["allreduce_compressed"] = (allreduce_compressed, (x, TopK(ratio=0.5)))
    calls["ps_push_pull"] = (ps_push_pull, (x,))
    for name, (function, args) in calls.items():
        with pytest.raises(ValueError, match="no process group: call torch.distributed") as info:
            function(*args)
        assert str(info.value).startswith(name), (name, str(info.value))
