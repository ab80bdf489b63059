"""Every compressor as a DDP communication hook on GPUs, with NCCL (``-m cuda``).

One process per GPU (at most 4), NCCL: a small MLP on each rank's GPU trains 5 steps of plain
SGD with DDP, once per compressor registered through ``ddp_comm_hook`` (with the record's error
feedback), and once through ``aggregate_gradients``. Held: the loss stays finite and the replicas
end bitwise identical (a hook whose result differed across ranks would let them drift), the
gradients never leave the GPU (the hook sees CUDA buckets), and the run with plain DDP learns.
With one GPU the world is one rank: the hooks still compress and decompress on the GPU, the
reference ring has nothing to send (NCCL refuses two ranks on one GPU, and gloo cannot send
CUDA tensors point to point). Convergence itself is held on CPU (test_convergence.py).
"""

# No "from __future__ import annotations": DDP checks the hook's annotations as real objects.
import pytest
import torch
from torch.nn.parallel import DistributedDataParallel

from reference_impls.compression import available, ddp_comm_hook, get
from reference_impls.compression.adapters import aggregate_gradients
from reference_impls.testing import run_distributed

pytestmark = pytest.mark.cuda
STEPS = 5
#: the record's method includes error feedback and get() does not add it
NEEDS_EF = {"topk-sparsification", "topk-sparsification/sampled",
            "topk-sparsification/prefiltered", "gtopk", "threshold-sparsification", "powersgd",
            "powersgd/fast"}  # fmt: skip
CONFIG = {"topk-sparsification": {"ratio": 0.1}, "gtopk": {"ratio": 0.1},
          "random-k": {"ratio": 0.5, "unbiased": True}, "threshold-sparsification": {"tau": 0.1},
          "dgc": {"ratio": 0.1}}  # fmt: skip


def _model(device: torch.device) -> torch.nn.Module:
    generator = torch.Generator().manual_seed(0)  # the same weights on every rank
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    with torch.no_grad():
        for param in model.parameters():
            param.copy_(torch.randn(param.shape, generator=generator) * 0.1)
    return model.to(device)


def _data(rank: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(100 + rank)
    x = torch.randn(64, 32, generator=generator)
    return x.to(device), x.sum(dim=1, keepdim=True).to(device) / 8


def _train(name: str | None, device: torch.device, rank: int, hook: bool) -> dict:
    x, y = _data(rank, device)
    seen: set[str] = set()
    model = _model(device)
    ddp = DistributedDataParallel(model, device_ids=[device.index]) if hook else None
    compressor = None
    if name is not None:
        compressor = get(name, error_feedback=name in NEEDS_EF, **CONFIG.get(name, {}))
        if ddp is not None:
            inner = ddp_comm_hook(compressor, named_parameters=ddp.named_parameters())

            def spy(state: object, bucket: torch.distributed.GradBucket):  # noqa: ANN202
                seen.add(bucket.buffer().device.type)
                return inner(state, bucket)

            ddp.register_comm_hook(None, spy)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss((ddp or model)(x), y)
        loss.backward()
        if ddp is None and compressor is not None:
            aggregate_gradients(model, compressor)
        optimizer.step()
        losses.append(loss.item())
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).cpu()
    return {"losses": losses, "params": flat, "devices": sorted(seen)}


def ddp_worker(rank: int, world: int) -> dict[str, dict]:
    device = torch.device("cuda", rank)
    torch.cuda.set_device(device)
    runs = {"plain": _train(None, device, rank, hook=True)}
    for name in available():
        runs[name] = _train(name, device, rank, hook=True)
    runs["aggregate_gradients/powersgd"] = _train("powersgd", device, rank, hook=False)
    return runs


def test_every_compressor_as_a_ddp_hook_on_gpus() -> None:
    world = min(torch.cuda.device_count(), 4)
    per_rank = run_distributed(ddp_worker, world, backend="nccl", timeout_s=240)
    plain = per_rank[0]["plain"]["losses"]
    assert plain[-1] < plain[0], plain
    for label, run in per_rank[0].items():
        assert all(torch.isfinite(torch.tensor(run["losses"]))), label
        if label != "plain" and not label.startswith("aggregate"):
            assert run["devices"] == ["cuda"], (label, run["devices"])
        for other in per_rank[1:]:
            assert torch.equal(other[label]["params"], run["params"]), (label, "replicas drift")
