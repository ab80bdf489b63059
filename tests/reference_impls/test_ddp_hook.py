"""A compressor registered as a DDP communication hook trains like DDP when it keeps everything.

Two ranks, one Linear layer, the same initial weights and different data. With TopK(ratio=1)
nothing is dropped, so the hooked model's gradients must match plain DDP's averaged gradients
(up to float32 reordering, 1e-6). With ratio 0.25 and error feedback, the gradients must equal the
average of each rank's top-k, which the test recomputes from the ranks' local gradients.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from reference_impls.compression import ErrorFeedback, TopK, ddp_comm_hook
from reference_impls.testing import run_distributed


def _model() -> torch.nn.Module:
    torch.manual_seed(0)  # same weights on every rank, as DDP requires
    return torch.nn.Linear(8, 4)


def _batch(rank: int) -> torch.Tensor:
    return torch.randn(16, 8, generator=torch.Generator().manual_seed(rank))


def ddp_worker(rank: int, world: int) -> dict:
    results = {}
    for label, hook in [
        ("plain", None),
        ("topk-1.0", ddp_comm_hook(TopK(ratio=1.0))),
        ("topk-0.25-ef", ddp_comm_hook(ErrorFeedback(TopK(ratio=0.25)), per_parameter=False)),
        ("topk-0.25-per-param", ddp_comm_hook(TopK(ratio=0.25))),
    ]:
        model = DistributedDataParallel(_model(), bucket_cap_mb=25)
        if hook is not None:
            model.register_comm_hook(state=None, hook=hook)
        model(_batch(rank)).pow(2).sum().backward()
        results[label] = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
    local = _model()
    local(_batch(rank)).pow(2).sum().backward()
    results["local"] = torch.cat([p.grad.reshape(-1) for p in local.parameters()])
    dist.barrier()
    return results


def test_ddp_hook_matches_plain_ddp_and_topk_math() -> None:
    world = 2
    per_rank = run_distributed(ddp_worker, world, timeout_s=90)
    for rank in range(world):
        torch.testing.assert_close(
            per_rank[rank]["topk-1.0"], per_rank[rank]["plain"], rtol=1e-6, atol=1e-6
        )
    # DDP's bucket is the flat concatenation of all gradients (one bucket here), in reverse order of
    # registration; top-k picks by magnitude, so compare as sets of values via the dense result.
    buckets = [
        torch.cat([g.reshape(-1) for g in _grads_in_bucket_order(per_rank[r]["local"])])
        for r in range(world)
    ]
    compressor = TopK(ratio=0.25)
    averaged = sum(compressor.decompress(*compressor.compress(b)) for b in buckets) / world
    got = torch.cat([g.reshape(-1) for g in _grads_in_bucket_order(per_rank[0]["topk-0.25-ef"])])
    torch.testing.assert_close(got, averaged, rtol=1e-6, atol=1e-6)
    # Per parameter (the default): top-k of the weight and of the bias separately.
    per_param = [
        [
            compressor.decompress(*compressor.compress(g))
            for g in _grads_in_bucket_order(per_rank[r]["local"])
        ]
        for r in range(world)
    ]
    expected = torch.cat([(per_param[0][i] + per_param[1][i]) / world for i in (1, 0)])
    torch.testing.assert_close(per_rank[0]["topk-0.25-per-param"], expected, rtol=1e-6, atol=1e-6)


def _grads_in_bucket_order(flat: torch.Tensor) -> list[torch.Tensor]:
    weight, bias = flat[:32], flat[32:]
    return [bias, weight]  # DDP fills buckets in reverse parameter order
