"""Parameter-server push/pull against exact math, and its wire bytes per role against the formula.

Layouts: separate servers (the last S ranks) and colocated shards (on ranks 0..S-1), world sizes
1, 2, 3, 5, S from 1 to p, numel 0, 1, not divisible by S. Small-integer data make every sum
exact, so results must be equal.
"""

from __future__ import annotations

import pytest
import torch
from dist_data import model_of, small_ints

from reference_impls.comm import count_bytes
from reference_impls.parameter_server import ps_push_pull, ps_roles
from reference_impls.testing import run_distributed

NUMELS = [0, 1, 7, 12]


def layouts(world: int) -> list[tuple[str, int]]:
    separate = [("separate", s) for s in (1, 2) if s < world]
    colocated = [("colocated", s) for s in sorted({1, 2, world}) if s <= world]
    return separate + colocated


def ps_worker(rank: int, world: int) -> list[dict]:
    out = []
    for placement, servers in layouts(world):
        for numel in NUMELS:
            x = small_ints(rank, numel, torch.float32)
            with count_bytes() as counter:
                ps_push_pull(x, num_servers=servers, placement=placement)
            out.append(
                {"layout": (placement, servers, numel), "got": x, "sent": counter.bytes_sent}
            )
    return out


def role_of(rank: int, world: int, placement: str, servers: int) -> str:
    workers, server_ranks = ps_roles(world, servers, placement)  # type: ignore[arg-type]
    if placement == "separate":
        return "worker" if rank < workers else "server"
    return "host" if rank in server_ranks else "worker"


@pytest.mark.parametrize("world", [1, 2, 3, 5])
def test_push_pull(world: int) -> None:
    per_rank = run_distributed(ps_worker, world, timeout_s=90)
    model = model_of("parameter-server")
    for index, case in enumerate(per_rank[0]):
        placement, servers, numel = case["layout"]
        p, server_ranks = ps_roles(world, servers, placement)
        exact = sum(small_ints(r, numel, torch.float32) for r in range(p))
        shards = exact.tensor_split(servers)
        total_sent, total_formula = 0, 0.0
        for rank in range(world):
            result = per_rank[rank][index]
            if rank < p:
                assert torch.equal(result["got"], exact), (rank, case["layout"])
            else:  # a separate server holds the sum of its own shard
                j = server_ranks.index(rank)
                assert torch.equal(result["got"].tensor_split(servers)[j], shards[j])
            role = role_of(rank, world, placement, servers)
            formula = float(model.evaluate_volume(placement, role, p=p, S=servers, n=4 * numel))
            total_sent += result["sent"]
            total_formula += formula
            if numel % servers == 0:
                assert result["sent"] == pytest.approx(formula), (rank, role, case["layout"])
        assert total_sent == pytest.approx(total_formula), case["layout"]


@pytest.mark.parametrize(
    ("world", "servers", "placement", "words"),
    [
        (1, 1, "separate", "leaves no worker"),
        (3, 4, "colocated", "> group size"),
        (3, 0, "separate", "positive int"),
        (3, 1, "ring", "placement must be"),
    ],
)
def test_impossible_layouts_are_refused(world, servers, placement, words) -> None:
    with pytest.raises(ValueError, match=words):
        ps_roles(world, servers, placement)
