"""SSP parameter server: BSP equivalence at s = 0, the staleness bound, exactly-once updates, bytes.

World sizes 2-5 with 1 or 2 separate servers (the last ranks). The update a worker computes is
integer-valued and depends on the parameters it read (``update_of``), so a stale read changes the
trajectory while every sum stays exact in float32 and float16 (integers far below 2**11):
results are compared with ``torch.equal``. In the delayed cases worker 0 sleeps in
``compute_update`` at clocks 0 and 2, so the other workers run ahead as far as the bound lets
them.
"""

from __future__ import annotations

import time

import pytest
import torch
import torch.distributed as dist
from dist_data import error_of, model_of, small_ints

from reference_impls.comm import count_bytes
from reference_impls.parameter_server import ps_push_pull, ps_roles, ssp_train
from reference_impls.testing import run_distributed

CLOCKS = 5
SLOW_WORKER_SLEEP_S = 0.1  # long beside a message round trip, even on a loaded machine
SLOW_CLOCKS = (0, 2)


def update_of(worker: int, params: torch.Tensor, clock: int) -> torch.Tensor:
    """Small integers of (worker, clock) plus trunc(params / 8): integer, and read-dependent."""
    base = small_ints(worker, params.numel(), params.dtype, salt=clock).view(params.shape)
    return base + torch.trunc(params / 8)


def initial(numel: int, dtype: torch.dtype) -> torch.Tensor:
    return small_ints(99, numel, dtype, salt=1)


def cases(world: int) -> list[dict]:
    """Every case a world size runs: (servers, staleness, numel, dtype, lr, slow worker 0)."""
    out = []
    for servers in [s for s in (1, 2) if s < world]:
        for numel in (0, 1, 7, 12):
            out.append(dict(servers=servers, s=0, numel=numel, dtype=torch.float32, lr=1.0))
        for s in (0, 1, 2):
            out.append(dict(servers=servers, s=s, numel=12, dtype=torch.float32, lr=1.0, slow=1))
        out.append(dict(servers=servers, s=1, numel=12, dtype=torch.float32, lr=None, slow=1))
        out.append(dict(servers=servers, s=1, numel=7, dtype=torch.float16, lr=0.5, slow=1))
    return out


def bsp_reference(rank: int, workers: int, case: dict) -> torch.Tensor:
    """The same training, bulk-synchronous, through ps_push_pull (sum of all workers' updates)."""
    params = initial(case["numel"], case["dtype"])
    for clock in range(CLOCKS):
        is_worker = rank < workers
        update = update_of(rank, params, clock) if is_worker else torch.zeros_like(params)
        ps_push_pull(update, num_servers=case["servers"], placement="separate")
        if is_worker:  # a server's buffer holds only its shard's sum: keep params as they were
            params = params + update if case["lr"] is None else params - case["lr"] * update
    return params


def ssp_case(rank: int, workers: int, case: dict) -> dict:
    params = initial(case["numel"], case["dtype"])
    computed: list[torch.Tensor] = []

    def compute_update(values: torch.Tensor, clock: int) -> torch.Tensor:
        if case.get("slow") and rank == 0 and clock in SLOW_CLOCKS:
            time.sleep(SLOW_WORKER_SLEEP_S)
        update = update_of(rank, values, clock)
        computed.append(update.clone())
        return update

    with count_bytes() as counter:
        report = ssp_train(
            params, compute_update, CLOCKS, case["s"], case["servers"], case["lr"], timeout_s=60
        )
    return {"params": params, "report": report, "updates": computed, "sent": counter.bytes_sent}


def bad_calls(world: int) -> dict[str, tuple[str, str]]:
    """Bad arguments, identical on every rank, so every rank raises before any message."""
    x = torch.zeros(4)
    ok = lambda values, clock: values  # noqa: E731
    return {
        "staleness": error_of(lambda: ssp_train(x, ok, 2, -1)),
        "num_clocks": error_of(lambda: ssp_train(x, ok, 1.5, 0)),  # type: ignore[arg-type]
        "lr": error_of(lambda: ssp_train(x, ok, 2, 0, lr=0.0)),
        "lr_nan": error_of(lambda: ssp_train(x, ok, 2, 0, lr=float("nan"))),
        "params": error_of(lambda: ssp_train(torch.zeros(4, dtype=torch.int64), ok, 2, 0)),
        "strided": error_of(lambda: ssp_train(torch.zeros(4, 4).t(), ok, 2, 0)),
        "callable": error_of(lambda: ssp_train(x, "sgd", 2, 0)),  # type: ignore[arg-type]
        "servers": error_of(lambda: ssp_train(x, ok, 2, 0, num_servers=world)),
        "timeout": error_of(lambda: ssp_train(x, ok, 2, 0, timeout_s=0)),
    }


def ssp_world(rank: int, world: int) -> dict:
    out: dict = {"cases": [], "errors": bad_calls(world)}
    for case in cases(world):
        workers, _ = ps_roles(world, case["servers"], "separate")
        result = ssp_case(rank, workers, case)
        result["bsp"] = bsp_reference(rank, workers, case) if case["s"] == 0 else None
        out["cases"].append(result)
    # Last, since it leaves a server's receive pending: a worker fails, the server times out.
    # The barrier keeps the workers alive until then (an exited worker resets the connection,
    # which the server reports as gloo's RuntimeError instead).
    wrong = lambda values, clock: values[:1]  # noqa: E731
    out["hang"] = error_of(lambda: ssp_train(torch.zeros(4), wrong, 2, 0, timeout_s=1.0))
    dist.barrier()
    return out


def check_reads(case: dict, workers: int, served: tuple) -> None:
    s = case["s"]
    for read in served:
        assert read.committed[read.worker] == read.clock  # read-my-writes
        assert read.clock - min(read.committed) <= (0 if read.clock == CLOCKS else s), read
        assert max(read.started) - min(read.started) <= s, read
        assert read.started[read.worker] == read.clock
    if case["numel"] >= case["servers"]:  # every server holds a non-empty shard
        assert len(served) == workers * CLOCKS  # reads at clocks 1..T, each answered once
    if case.get("slow") and s > 0 and workers > 1:  # the bound was used, not just respected
        assert any(r.clock - min(r.committed) >= 1 for r in served), served


@pytest.mark.parametrize("world", [2, 3, 4, 5])
def test_ssp(world: int) -> None:
    per_rank = run_distributed(ssp_world, world, timeout_s=120)
    volume = model_of("parameter-server")
    for index, case in enumerate(cases(world)):
        servers = case["servers"]
        workers, server_ranks = ps_roles(world, servers, "separate")
        results = [per_rank[r]["cases"][index] for r in range(world)]
        sign = 1 if case["lr"] is None else -case["lr"]
        every_update = [u for r in range(workers) for u in results[r]["updates"]]
        expected = initial(case["numel"], case["dtype"]) + sign * sum(every_update)
        elem = torch.tensor([], dtype=case["dtype"]).element_size()
        nbytes = case["numel"] * elem
        shard_sizes = [t.numel() for t in expected.tensor_split(servers)]
        for rank in range(world):
            got = results[rank]["params"]
            if rank < workers:
                assert torch.equal(got, expected), (rank, case)  # each update applied once
                assert len(results[rank]["updates"]) == CLOCKS
                if case["s"] == 0:
                    assert torch.equal(got, results[rank]["bsp"]), (rank, case)
                formula = volume.evaluate_volume(
                    "separate", "worker", p=workers, S=servers, n=nbytes
                )
                assert results[rank]["sent"] == CLOCKS * float(formula)  # n bytes every clock
            else:
                j = server_ranks.index(rank)
                assert torch.equal(got.tensor_split(servers)[j], expected.tensor_split(servers)[j])
                check_reads(case, workers, results[rank]["report"].served_reads)
                assert results[rank]["sent"] == CLOCKS * workers * shard_sizes[j] * elem
                if case["numel"] % servers == 0:
                    formula = volume.evaluate_volume(
                        "separate", "server", p=workers, S=servers, n=nbytes
                    )
                    assert results[rank]["sent"] == pytest.approx(CLOCKS * float(formula))
    errors = per_rank[0]["errors"]
    assert errors["staleness"][0] == "ValueError" and "staleness" in errors["staleness"][1]
    assert errors["num_clocks"][0] == "ValueError" and "num_clocks" in errors["num_clocks"][1]
    for key in ("lr", "lr_nan"):
        assert errors[key][0] == "ValueError" and "lr must be" in errors[key][1]
    assert errors["params"][0] == "TypeError" and "floating-point" in errors["params"][1]
    assert errors["strided"][0] == "ValueError" and "contiguous" in errors["strided"][1]
    assert errors["callable"][0] == "TypeError" and "compute_update" in errors["callable"][1]
    assert errors["servers"][0] == "ValueError" and "leaves no worker" in errors["servers"][1]
    assert errors["timeout"][0] == "ValueError" and "timeout_s" in errors["timeout"][1]
    workers, _ = ps_roles(world, 1, "separate")
    for rank in range(world):
        kind, message = per_rank[rank]["hang"]
        if rank < workers:
            assert kind == "ValueError" and "compute_update must return" in message
        else:
            assert kind == "TimeoutError" and "no push from workers" in message
