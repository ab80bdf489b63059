"""Ring all-reduce against dist.all_reduce and exact math, and its wire bytes against the formula.

World sizes 1, 2, 3, 5; numel 0, 1, fewer than p, not divisible by p, divisible by p; all four
float dtypes; contiguous and non-contiguous tensors. Data are small integers, so every sum is
exact in every dtype and results must be *equal*, whatever the summation order; one extra case
with random normals allows the reordering error of float32 sums (1e-5 relative).
"""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
from dist_data import model_of, normals, small_ints

from reference_impls.collectives import ring_allreduce
from reference_impls.comm import count_bytes
from reference_impls.testing import run_distributed

NUMELS = [0, 1, 2, 7, 13, 60]
DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


def ring_worker(rank: int, world: int) -> list[dict]:
    results = []
    for dtype in DTYPES:
        for numel in NUMELS:
            x = small_ints(rank, numel, dtype)
            reference = x.clone()
            if dtype in (torch.float32, torch.float64):
                dist.all_reduce(reference)
            with count_bytes() as counter:
                ring_allreduce(x)
            results.append(
                {
                    "dtype": dtype,
                    "numel": numel,
                    "got": x,
                    "torch": reference,
                    "sent": counter.bytes_sent,
                }
            )
    matrix = small_ints(rank, 15, torch.float32, salt=1).view(3, 5).t()  # non-contiguous view
    ring_allreduce(matrix)
    noisy = normals(rank, 1001)
    noisy_reference = noisy.clone()
    dist.all_reduce(noisy_reference)
    ring_allreduce(noisy)
    return results + [{"matrix": matrix, "noisy": noisy, "noisy_torch": noisy_reference}]


@pytest.mark.parametrize("world", [1, 2, 3, 5])
def test_ring_allreduce(world: int) -> None:
    per_rank = run_distributed(ring_worker, world, timeout_s=90)
    model = model_of("ring-allreduce")
    for case_index, case in enumerate(per_rank[0][:-1]):
        dtype, numel = case["dtype"], case["numel"]
        exact = sum(small_ints(r, numel, torch.float64) for r in range(world)).to(dtype)
        for rank in range(world):
            got = per_rank[rank][case_index]
            assert torch.equal(got["got"], exact), (rank, dtype, numel)
            if dtype in (torch.float32, torch.float64):
                assert torch.equal(got["got"], got["torch"])
        # Wire bytes: the formula's volume term, exactly when p divides numel; always on average.
        element = torch.empty((), dtype=dtype).element_size()
        formula = float(model.evaluate_volume(p=world, n=numel * element))
        sent = [per_rank[r][case_index]["sent"] for r in range(world)]
        assert sum(sent) == pytest.approx(world * formula)
        if numel % world == 0:
            assert sent == [pytest.approx(formula)] * world
    expected_matrix = sum(small_ints(r, 15, torch.float32, salt=1) for r in range(world))
    for rank in range(world):
        last = per_rank[rank][-1]
        assert torch.equal(last["matrix"], expected_matrix.view(3, 5).t())
        torch.testing.assert_close(last["noisy"], last["noisy_torch"], rtol=1e-5, atol=1e-5)


def test_ring_allreduce_rejects_integer_tensors() -> None:
    with pytest.raises(TypeError, match="dtype must be one of"):
        ring_allreduce(torch.zeros(3, dtype=torch.int64))
