"""fp16/bf16, random-k, threshold, DGC and gTop-k exchanged across 1-5 gloo ranks.

One spawn of 5 processes serves every world size p = 1..5, each on the process group of ranks
0 .. p-1 (so the group argument is exercised too). For each p the worker runs every case
(compressor x dtype x numel x 3 steps) through ``allreduce_compressed`` and reports the averaged
tensor, the bytes it sent and, under error feedback, its residual. The parent recomputes every
rank's compression from the same deterministic data (``dist_data``) and checks:

- the result equals the mean of the ranks' decompressed payloads *bitwise* where the exchange
  adds in rank order (all-gather, threshold, DGC) or the data make every sum exact (small
  integers through the fp16/bf16 and shared-seed all-reduces); gTop-k against a simulation of
  the whole merge (test_compressors_gtopk.simulate_gtopk);
- otherwise within a stated bound: the 16-bit ring sum of normals is off by at most
  (p + 1) u sum_r |x_r| / p, u = 2**-11 (fp16) or 2**-8 (bf16): one rounding per cast (two
  units for stochastic rounding) and one per addition; float32 reordering of the unbiased
  random-k sum is held to p * 2**-23 sum_r |C(x_r)| (the rescaled values);
- error-feedback residuals equal the parent's bitwise (the invariant holds across processes);
- bytes sent per rank equal the cost model's volume term: exactly for all-gathers, DGC and
  powers of two in gTop-k; ring all-reduces exactly when p divides the count, always on average;
  threshold per rank w (sum(c) - c_{r+1}) plus 8 (p - 1) bytes of counts, the model with k =
  mean(c) on average; gTop-k on non-powers of two for the busiest rank.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import pytest
import torch
import torch.distributed as dist
from dist_data import normals, small_ints
from test_compressors_gtopk import local_sets, simulate_gtopk

import costmodels
from reference_impls.comm import count_bytes
from reference_impls.compression import Compressor, ErrorFeedback, allreduce_compressed
from reference_impls.compression.dgc import DGC
from reference_impls.compression.fp16 import HalfPrecision
from reference_impls.compression.gtopk import GlobalTopK
from reference_impls.compression.random_k import RandomK, default_rank
from reference_impls.compression.threshold import ThresholdSparsifier
from reference_impls.testing import run_distributed
from taxonomy import load_taxonomy

STEPS = 3
WORLDS = [1, 2, 3, 4, 5]
F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
UNIT_ROUNDOFF = {F16: 2.0**-11, BF16: 2.0**-8}


@dataclass(frozen=True)
class Case:
    record: str
    make: Callable[[int | None], Compressor]  # rank (None in the workers: use the default)
    data: str  # "ints" (sums exact in every dtype) or "normals"
    dtypes: tuple[torch.dtype, ...]
    exact: bool = True  # bitwise equality expected


CASES = {
    "fp16": Case("fp16-comm", lambda r: HalfPrecision(), "ints", (F16, BF16, F32, F64)),
    "bf16": Case("fp16-comm", lambda r: HalfPrecision("bf16"), "ints", (F32,)),
    "fp16-ef": Case(
        "fp16-comm", lambda r: ErrorFeedback(HalfPrecision()), "normals", (F32,), exact=False
    ),
    "bf16-sr": Case(
        "fp16-comm",
        lambda r: HalfPrecision("bf16", stochastic=True, rank=r),
        "normals",
        (F32,),
        exact=False,
    ),
    "randk-shared": Case(
        "random-k", lambda r: ErrorFeedback(RandomK(ratio=0.3)), "ints", (F32, BF16)
    ),
    "randk-unbiased": Case(
        "random-k", lambda r: RandomK(ratio=0.3, unbiased=True), "normals", (F32,), exact=False
    ),
    "randk-independent": Case(
        "random-k",
        lambda r: ErrorFeedback(RandomK(ratio=0.3, shared_seed=False, rank=r)),
        "normals",
        (F32, F64),
    ),
    "threshold": Case(
        "threshold-sparsification",
        lambda r: ErrorFeedback(ThresholdSparsifier(tau=1.0)),
        "normals",
        (F32, BF16),
    ),
    "threshold-exact": Case(
        "threshold-sparsification",
        lambda r: ThresholdSparsifier(tau=0.8, values="exact"),
        "normals",
        (F32,),
    ),
    "dgc": Case(
        "dgc",
        lambda r: DGC(ratio=0.05, warmup_steps=2, sample_ratio=0.5, clip_norm=4.0),
        "normals",
        (F32, F16),
    ),
    "dgc-ef": Case("dgc", lambda r: ErrorFeedback(DGC(ratio=0.1, momentum=0.5)), "normals", (F32,)),
    "gtopk": Case("gtopk", lambda r: ErrorFeedback(GlobalTopK(ratio=0.2)), "normals", (F32, BF16)),
}


def numels(world: int) -> list[int]:
    return sorted({0, 1, world - 1, 7, 60})  # empty, one, fewer than p, not divisible by p


def data(kind: str, rank: int, numel: int, dtype: torch.dtype, step: int) -> torch.Tensor:
    if kind == "ints":
        return small_ints(rank, numel, dtype, salt=step)
    return normals(rank, numel, salt=step).to(dtype)


def exchange_worker(rank: int, processes: int) -> dict[int, dict]:
    """Every world size in one spawn: world size p runs on the group of ranks 0 .. p-1."""
    out = {}
    for world in WORLDS:
        group = dist.new_group(list(range(world)))  # every process must create every group
        if rank < world:
            out[world] = run_cases(rank, world, group)
    return out


def run_cases(rank: int, world: int, group: dist.ProcessGroup) -> dict:
    assert dist.get_world_size(group) == world and dist.get_rank(group) == rank
    out: dict = {"default_rank": default_rank()}
    for label, case in CASES.items():
        for dtype in case.dtypes:
            for numel in numels(world):
                compressor = case.make(None)
                steps = []
                for step in range(STEPS):
                    x = data(case.data, rank, numel, dtype, step)
                    with count_bytes() as counter:
                        allreduce_compressed(x, compressor, group, name="g")
                    residual = getattr(compressor, "residuals", {}).get("g")
                    # a snapshot: error feedback updates its residual buffer in place
                    snapshot = None if residual is None else residual.clone()
                    steps.append((x, counter.bytes_sent, snapshot))
                out[(label, str(dtype), numel)] = steps
    # Shared seeds: every rank draws the same indices; independent streams differ.
    for shared in (True, False):
        compressor = RandomK(k=5, shared_seed=shared)
        picks = []
        for step in range(STEPS):
            payload, ctx = compressor.compress(normals(rank, 40, salt=step), "w")
            picks.append((ctx.indices if shared else payload[1]).tolist())
        out[("picks", shared)] = picks
    # fp16 sums overflow past 65504 even when the mean fits; bf16 has float32's range.
    for dtype in ("fp16", "bf16"):
        x = torch.full((6,), 40000.0)
        allreduce_compressed(x, HalfPrecision(dtype), group, average=False)
        out[("overflow", dtype)] = x
    return out


def expected_steps(case: Case, world: int, numel: int, dtype: torch.dtype) -> list[dict]:
    """Recompute every rank's compression here: mean, residuals and payload counts per step."""
    compressors = [case.make(r) for r in range(world)]
    results = []
    for step in range(STEPS):
        xs = [data(case.data, r, numel, dtype, step) for r in range(world)]
        locals_, counts = [], []
        for x, compressor in zip(xs, compressors, strict=True):
            payload, ctx = compressor.compress(x, "g")
            locals_.append(compressor.decompress(payload, ctx).view(x.shape))
            counts.append(payload[0].numel())
        total = torch.zeros_like(xs[0])
        for local in locals_:
            total += local  # rank order, as the all-gather exchanges decode
        residuals = [getattr(c, "residuals", {}).get("g") for c in compressors]
        results.append(
            {
                "mean": total / world,
                "residuals": residuals,
                "counts": counts,
                "sum_abs_inputs": sum(x.double().abs() for x in xs),
                "sum_abs_locals": sum(d.double().abs() for d in locals_),
            }
        )
    return results


def expected_gtopk_steps(world: int, numel: int, dtype: torch.dtype) -> list[dict]:
    topk = GlobalTopK(ratio=0.2)
    residuals = [torch.zeros(numel, dtype=dtype) for _ in range(world)]
    results = []
    for step in range(STEPS):
        corrected = [data("normals", r, numel, dtype, step) + residuals[r] for r in range(world)]
        sets = local_sets(corrected, topk)
        k = topk.k_for(numel)
        values, indices = simulate_gtopk(sets, k) if k else sets[0]
        ctx = topk.compress(corrected[0])[1]
        total = topk.decompress((values, indices), ctx)
        for r, (mine_values, mine_indices) in enumerate(sets):
            kept = torch.isin(mine_indices, indices)
            residuals[r] = corrected[r] - topk.decompress(
                (mine_values[kept], mine_indices[kept]), ctx
            )
        results.append({"mean": total / world, "residuals": [t.clone() for t in residuals]})
    return results


def sum_tolerance(case: Case, world: int, want: dict) -> torch.Tensor:
    """The bounds of the module docstring for the non-bitwise cases."""
    compressor = case.make(0)
    half = UNIT_ROUNDOFF.get(getattr(getattr(compressor, "inner", compressor), "dtype", None))
    if half is None:  # float32 ring sum vs rank-order sum of the rescaled random-k values
        return world * 2.0**-23 * want["sum_abs_locals"] + 1e-12
    return (world + 1) * half * want["sum_abs_inputs"] / world * 1.01


def ring_allreduce_bytes(p: int, rank: int, count: int, width: int) -> int:
    """Bytes a rank sends in the ring all-reduce (reference_impls.collectives.ring): every
    chunk but its own in the reduce-scatter, every chunk but chunk rank+1 in the all-gather."""
    if p == 1 or count == 0:
        return 0
    sizes = [len(chunk) for chunk in torch.arange(count).tensor_split(p)]
    return (2 * count - sizes[rank] - sizes[(rank + 1) % p]) * width


def gtopk_messages(p: int, rank: int) -> int:
    """Messages a rank sends: log2 q rounds, plus the fold (extra ranks fold into odd ranks)."""
    q = 1 << (p.bit_length() - 1)
    extra, rounds = p - q, q.bit_length() - 1
    if rank < 2 * extra:
        return 1 if rank % 2 == 0 else rounds + 1
    return rounds


@cache
def cost_models() -> dict[str, costmodels.CostModel]:
    """Each case's record's cost model, as dist_data.model_of finds it, with the taxonomy loaded
    once (loading it takes seconds)."""
    records = load_taxonomy().records
    ids = {case.record for case in CASES.values()}
    return {rid: costmodels.get(records[rid].cost_model) for rid in ids}


def check_bytes(label: str, case: Case, world: int, numel: int, dtype, step, sent, counts) -> None:
    model = cost_models()[case.record]
    width = torch.empty((), dtype=dtype).element_size()
    where = (label, str(dtype), numel, step)
    if case.record == "fp16-comm":
        formula = float(model.evaluate_volume(p=world, d=numel, b=16))
        assert sent == [ring_allreduce_bytes(world, r, numel, 2) for r in range(world)], where
        assert sum(sent) == pytest.approx(world * formula), where
        if numel % world == 0:
            assert sent == [pytest.approx(formula)] * world, where
    elif label == "randk-shared" or label == "randk-unbiased":
        k = RandomK(ratio=0.3).k_for(numel)
        formula = float(model.evaluate_volume("shared-seed", p=world, k=k, w_v=width))
        assert sent == [ring_allreduce_bytes(world, r, k, width) for r in range(world)], where
        assert sum(sent) == pytest.approx(world * formula), where
        if k % world == 0:
            assert sent == [pytest.approx(formula)] * world, where
    elif label == "randk-independent":
        k = RandomK(ratio=0.3).k_for(numel)
        formula = float(model.evaluate_volume("independent", p=world, k=k, w_v=width, w_i=4))
        assert sent == [formula] * world, where
    elif case.record == "threshold-sparsification":
        word = 4 if label == "threshold" else width + 4  # "exact" also sends the values
        counts_bytes = 8 * (world - 1) if world > 1 else 0
        expected = [
            counts_bytes + word * (sum(counts) - counts[(r + 1) % world]) if world > 1 else 0
            for r in range(world)
        ]
        assert sent == expected, where
        mean_k = sum(counts) / world
        formula = float(model.evaluate_volume(p=world, k=mean_k, w_i=word))
        assert sum(sent) / world - counts_bytes == pytest.approx(formula), where
    elif case.record == "dgc":
        dgc = DGC(ratio=0.05, warmup_steps=2) if label == "dgc" else DGC(ratio=0.1)
        k = dgc.k_at(step, numel)
        assert sent == [float(model.evaluate_volume(p=world, k=k, w_v=width, w_i=4))] * world, where
    elif case.record == "gtopk":
        k = GlobalTopK(ratio=0.2).k_for(numel)
        formula = float(model.evaluate_volume(p=world, k=k, w_v=width, w_i=4))
        assert sent == [gtopk_messages(world, r) * k * (width + 4) for r in range(world)], where
        assert max(sent) == formula, where
        if world & (world - 1) == 0:
            assert sent == [formula] * world, where
    else:
        raise AssertionError(f"no byte check for {label}")


@pytest.fixture(scope="module")
def results() -> dict[int, list[dict]]:
    """One spawn of 5 processes serves every world size (spawning costs seconds per rank)."""
    by_process = run_distributed(exchange_worker, max(WORLDS), timeout_s=240)
    return {world: [by_process[r][world] for r in range(world)] for world in WORLDS}


@pytest.mark.parametrize("world", WORLDS)
def test_compressed_exchange(world: int, results: dict[int, list[dict]]) -> None:
    per_rank = results[world]
    assert [per_rank[r]["default_rank"] for r in range(world)] == list(range(world))
    for label, case in CASES.items():
        for dtype in case.dtypes:
            for numel in numels(world):
                key = (label, str(dtype), numel)
                if case.record == "gtopk":
                    expected = expected_gtopk_steps(world, numel, dtype)
                else:
                    expected = expected_steps(case, world, numel, dtype)
                for step, want in enumerate(expected):
                    where = (*key, step)
                    for rank in range(world):
                        got, _, residual = per_rank[rank][key][step]
                        if case.exact:
                            assert torch.equal(got, want["mean"]), where
                        else:
                            tolerance = sum_tolerance(case, world, want)
                            error = (got.double() - want["mean"].double()).abs()
                            assert bool((error <= tolerance).all()), where
                        if want["residuals"][rank] is not None:
                            assert torch.equal(residual, want["residuals"][rank]), where
                    if case.record != "gtopk":
                        sent = [per_rank[r][key][step][1] for r in range(world)]
                        check_bytes(label, case, world, numel, dtype, step, sent, want["counts"])
                if case.record == "gtopk":
                    for step in range(STEPS):
                        sent = [per_rank[r][key][step][1] for r in range(world)]
                        check_bytes(label, case, world, numel, dtype, step, sent, [])
    for shared in (True, False):
        picks = [per_rank[r][("picks", shared)] for r in range(world)]
        assert all(p == picks[0] for p in picks) == (shared or world == 1)
    overflowed = per_rank[0][("overflow", "fp16")]
    assert bool(overflowed.isinf().all()) == (world > 1)  # 2 x 40000 > 65504
    wide = per_rank[0][("overflow", "bf16")]
    bf16_error = (world + 1) * UNIT_ROUNDOFF[BF16] * 40000.0 * world
    assert bool(((wide - 40000.0 * world).abs() <= bf16_error).all())
