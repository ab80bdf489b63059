"""signSGD with majority vote: one sign bit per element up, the majority's sign bit back.

Papers: J. Bernstein, Y.-X. Wang, K. Azizzadenesheli and A. Anandkumar, "signSGD: Compressed
optimisation for non-convex problems", ICML 2018, arXiv:1802.04434 (signSGD and the majority
vote); J. Bernstein, J. Zhao, K. Azizzadenesheli and A. Anandkumar, "signSGD with majority vote
is communication efficient and fault tolerant", ICLR 2019, arXiv:1810.05291 (the system).

Algorithm, p ranks, the vote sharded over all of them (cost model ``signsgd``, variant
``sharded-ps``: every rank is the server of 1/p of the vote):

1. Compress: bit_i = 1 if g_i < 0 else 0, packed eight to a byte (sign(0) counts as +1: one bit
   has no room for a zero).
2. Split the packed bytes into p shards (sizes differ by at most one byte); rank j owns shard j.
3. Push: every rank sends shard j of its bits to rank j.
4. Vote: rank j counts, per element of its shard, the ranks that voted negative; the majority
   is negative when more than half did. A tie (possible for even p) goes to +1, the same
   convention as sign(0).
5. Pull: rank j sends its voted shard to every other rank; all ranks now hold the whole vote.

:meth:`SignSGD.aggregate` returns total = p * vote (and this rank's own signs as ``local``), so
``allreduce_compressed`` yields the majority vote itself as the mean. The compressor is biased;
the record's method sends raw signs (wrap in ErrorFeedback for the EF variant, or see
``ef_signsgd``).

Communication cost: rank j sends the n - n_j bytes of the others' shards, then n_j bytes to
each of p - 1 ranks: n + (p - 2) n_j bytes, n = ceil(d / 8). With n_j = n / p that is the model's
2 (p-1)/p d b / 8 (b = 1); in general the ranks together send exactly p times the model's
per-rank term (when 8 divides d), and each rank's share differs by at most p - 2 bytes.

Example::

    allreduce_compressed(grad, SignSGD())     # grad becomes the element-wise majority of signs
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.distributed as dist

from reference_impls.comm.wire import irecv, isend, wait_all
from reference_impls.compression.base import Aggregated, Compressor, Payload
from reference_impls.compression.bits import check_float_tensor, pack_bits, unpack_bits
from reference_impls.compression.catalog import register_compressor
from reference_impls.registry import reference_impl


@dataclass(frozen=True)
class SignContext:
    shape: torch.Size
    dtype: torch.dtype


def majority_vote(votes: list[torch.Tensor]) -> torch.Tensor:
    """Packed sign bits of equal length from p voters -> packed bits of the majority sign.

    A bit is 1 (negative) when more than half of the voters say negative; ties give 0 (+1).
    """
    count = votes[0].numel() * 8
    negatives = sum(unpack_bits(v, 1, count) for v in votes)
    return pack_bits(2 * negatives > len(votes), 1)


@register_compressor("signsgd")
@reference_impl
class SignSGD(Compressor):
    """1-bit signs, aggregated by a majority vote sharded over the ranks."""

    communication = "custom"
    unbiased = False

    def compress(self, tensor: torch.Tensor, name: str = "") -> tuple[Payload, SignContext]:
        check_float_tensor(tensor, "SignSGD.compress")
        bits = pack_bits(tensor.reshape(-1) < 0, 1)
        return (bits,), SignContext(tensor.shape, tensor.dtype)

    def decompress(self, payload: Payload, ctx: SignContext) -> torch.Tensor:
        (bits,) = payload
        negative = unpack_bits(bits, 1, ctx.shape.numel())
        return (1 - 2 * negative).to(ctx.dtype).view(ctx.shape)

    def wire_bytes(self, numel: int, dtype: torch.dtype) -> int:
        return math.ceil(numel / 8)

    def aggregate(
        self, tensor: torch.Tensor, name: str = "", group: dist.ProcessGroup | None = None
    ) -> Aggregated:
        """Steps 2-5: push sign shards, vote, pull the voted shards; total = p * vote."""
        payload, ctx = self.compress(tensor, name)
        local = self.decompress(payload, ctx)
        world, me = dist.get_world_size(group), dist.get_rank(group)
        (bits,) = payload
        if world == 1 or bits.numel() == 0:
            return Aggregated(local * world, local)
        shards = list(bits.tensor_split(world))
        others = [j for j in range(world) if j != me]
        ballots = [shards[me] if j == me else torch.empty_like(shards[me]) for j in range(world)]
        # 3. Push every shard to its owner while receiving the ballots for our own shard.
        pushes = [isend(shards[j], j, group) for j in others]
        wait_all([irecv(ballots[j], j, group) for j in others])
        # 4. Vote on our shard, 5. send it to everyone and receive the other voted shards.
        voted = [torch.empty_like(shard) for shard in shards]
        voted[me] = majority_vote(ballots)
        pulls = [isend(voted[me], j, group) for j in others]
        pulls += [irecv(voted[j], j, group) for j in others]
        wait_all(pushes + pulls)
        vote = self.decompress((torch.cat(voted),), ctx)
        return Aggregated(vote * world, local)
