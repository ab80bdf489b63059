"""1-bit Adam: dense Adam during a warm-up, then 1-bit error-compensated momentum averaging.

Paper: H. Tang, S. Gan, A. A. Awan, S. Rajbhandari, C. Li, X. Lian, J. Liu, C. Zhang and Y. He,
"1-bit Adam: Communication Efficient Large-Scale Training with Adam's Convergence Speed",
ICML 2021 (PMLR 139), arXiv:2102.02888.

Algorithm (p ranks; all parameters form one flat buffer of d elements):

1. Warm-up, steps t = 1..W: average the gradients with the reference ring all-reduce and take a
   plain Adam step (torch.optim.Adam's formula, bias corrections included).
2. Freeze: the second moment v stops changing after step W; the preconditioner
   sqrt(v_W) / sqrt(1 - beta2^W) + eps is fixed from then on.
3. Compressed steps, t > W: rank i updates its momentum with its *local* gradient,
   m_i = beta1 m + (1 - beta1) g_i; the ranks average the m_i with the compressed all-reduce
   below, every rank stores the same average as m and steps
   x <- x - lr / (1 - beta1^t) * m / preconditioner.
   Compressed all-reduce, error-compensated on both sides (sign(0) counts as +1):
   a. worker: c_i = m_i + e_i, scale s_i = ||c_i|| / sqrt(d), e_i <- c_i - s_i sign(c_i);
   b. the sign bits, packed 8 to a byte, are cut into p chunks of c elements
      (c = d rounded up to a multiple of 8p, divided by p); an all-to-all hands rank j
      chunk j of every rank, and a ring all-gather spreads the p worker scales;
   c. server j: a_j = mean_i s_i sign(c_i)[chunk j], c'_j = a_j + e'_j, s'_j = ||c'_j|| /
      sqrt(len_j), e'_j <- c'_j - s'_j sign(c'_j)   (len_j: real elements of chunk j);
   d. ring all-gathers of the server sign chunks and scales; m = concat_j s'_j sign(c'_j).

Communication cost per rank (cost model ``onebit-adam``): a warm-up step is a ring all-reduce
of d w_v bytes (variant ``warmup``: 2 (p-1)/p d w_v, exact when p divides d). A compressed step
sends (p-1) c/8 bytes in the all-to-all, (p-1) c/8 in the sign all-gather and (p-1) w_v in each
scale all-gather: 2 (p-1)/p D/8 + 2 (p-1) w_v with D = p c, which is the variant
``compressed`` with b = 1 and d padded to a multiple of 8p, as the model assumes.

Differences from the paper: one flat buffer holds every parameter (one worker scale for the
whole model); Adam's bias corrections are kept, so the warm-up equals torch.optim.Adam and the
frozen preconditioner keeps the correction of step W; no weight decay; with one rank nothing is
communicated, so nothing is compressed (momentum SGD with the frozen preconditioner).

Example::

    optimizer = OneBitAdam(model.parameters(), lr=1e-3, warmup_steps=100)
    loss.backward(); optimizer.step(); optimizer.zero_grad()   # on every rank
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import torch
import torch.distributed as dist

from reference_impls.collectives.ring import ring_allgather, ring_allreduce
from reference_impls.comm.wire import irecv, isend, wait_all
from reference_impls.registry import reference_impl

_BIT_WEIGHTS = (128, 64, 32, 16, 8, 4, 2, 1)


def pack_signs(non_negative: torch.Tensor) -> torch.Tensor:
    """Pack a bool tensor whose length is a multiple of 8 into uint8, first element = top bit."""
    if non_negative.numel() % 8:
        raise ValueError(f"pack_signs: length must be a multiple of 8, got {non_negative.numel()}")
    weights = torch.tensor(_BIT_WEIGHTS, dtype=torch.uint8, device=non_negative.device)
    return (non_negative.view(-1, 8).to(torch.uint8) * weights).sum(-1, dtype=torch.uint8)


def unpack_signs(packed: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`pack_signs` along the last dimension: (..., k) uint8 -> (..., 8k) bool."""
    shifts = torch.arange(7, -1, -1, dtype=torch.uint8, device=packed.device)
    return ((packed.unsqueeze(-1) >> shifts) & 1).bool().flatten(-2)


def _signed(non_negative: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """scale * sign, with the sign given as a bool (True for >= 0); scale broadcasts."""
    return torch.where(non_negative, scale, -scale)


@reference_impl
class OneBitAdam(torch.optim.Optimizer):
    """Adam whose momentum travels as 1-bit signs plus scales after ``warmup_steps`` dense steps.

    Every rank of ``group`` must call :meth:`step` together (it communicates). All parameters
    share one dtype and device (they are averaged as one flat buffer).
    """

    def __init__(
        self,
        params: Iterable[torch.Tensor] | Iterable[dict[str, Any]],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        warmup_steps: int = 100,
        group: dist.ProcessGroup | None = None,
    ) -> None:
        if not lr >= 0.0:
            raise ValueError(f"OneBitAdam: lr must be >= 0, got {lr}")
        if len(betas) != 2 or not all(0.0 <= beta < 1.0 for beta in betas):
            raise ValueError(f"OneBitAdam: betas must be two numbers in [0, 1), got {betas}")
        if not eps > 0.0:
            raise ValueError(f"OneBitAdam: eps must be > 0, got {eps}")
        # W >= 1: the frozen preconditioner needs at least one second-moment update.
        if not isinstance(warmup_steps, int) or warmup_steps < 1:
            raise ValueError(f"OneBitAdam: warmup_steps must be an int >= 1, got {warmup_steps!r}")
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps})
        self.warmup_steps = warmup_steps
        self.group = group
        self.steps_taken = 0
        #: e_i over the d real elements, created at the first compressed step
        self.worker_error: torch.Tensor | None = None
        #: e'_j over this rank's server chunk of c elements
        self.server_error: torch.Tensor | None = None

    # --- the step ---------------------------------------------------------------------------
    def _entries(self, flat: torch.Tensor) -> Iterator[tuple[dict, torch.Tensor, torch.Tensor]]:
        """(param group, parameter, the parameter-shaped slice of ``flat``) in buffer order."""
        offset = 0
        for param_group in self.param_groups:
            for param in param_group["params"]:
                yield param_group, param, flat[offset : offset + param.numel()].view_as(param)
                offset += param.numel()

    def _flat_gradient(self) -> torch.Tensor:
        params = [p for g in self.param_groups for p in g["params"]]
        if len({(p.dtype, p.device) for p in params}) > 1:
            raise TypeError("OneBitAdam: all parameters must share one dtype and device")
        # A missing gradient counts as zero so that every rank sends the same buffer.
        parts = [
            (p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params
        ]
        return torch.cat(parts)

    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor] | None = None) -> torch.Tensor | None:
        """One optimizer step on every rank: dense Adam up to ``warmup_steps``, then compressed."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        grad = self._flat_gradient()
        self.steps_taken += 1
        if self.steps_taken <= self.warmup_steps:
            ring_allreduce(grad, self.group)
            grad.div_(dist.get_world_size(self.group))
            self._adam_step(grad)
        else:
            self._compressed_step(grad)
        return loss

    def _adam_step(self, grad: torch.Tensor) -> None:
        t = self.steps_taken
        for param_group, param, g in self._entries(grad):
            beta1, beta2 = param_group["betas"]
            state = self.state[param]
            if not state:
                state["exp_avg"] = torch.zeros_like(param)
                state["exp_avg_sq"] = torch.zeros_like(param)
            state["step"] = t
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            exp_avg.lerp_(g, 1 - beta1)  # beta1 m + (1 - beta1) g, rounded as torch's Adam does
            exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            denom = (exp_avg_sq.sqrt() / math.sqrt(1 - beta2**t)).add_(param_group["eps"])
            param.addcdiv_(exp_avg, denom, value=-param_group["lr"] / (1 - beta1**t))

    def _compressed_step(self, grad: torch.Tensor) -> None:
        t, frozen = self.steps_taken, self.warmup_steps
        local = torch.empty_like(grad)
        for (param_group, param, g), (_, _, m_i) in zip(
            self._entries(grad), self._entries(local), strict=True
        ):
            # The momentum moves with this rank's own gradient; the ranks average it afterwards.
            m_i.copy_(self.state[param]["exp_avg"]).lerp_(g, 1 - param_group["betas"][0])
        averaged = local
        if dist.get_world_size(self.group) > 1:
            averaged = self.compressed_allreduce(local)
        for param_group, param, m in self._entries(averaged):
            beta1, beta2 = param_group["betas"]
            state = self.state[param]
            state["step"] = t
            state["exp_avg"].copy_(m)
            # v is frozen: the preconditioner is the one of step W, bias correction included.
            denom = (state["exp_avg_sq"].sqrt() / math.sqrt(1 - beta2**frozen)).add_(
                param_group["eps"]
            )
            param.addcdiv_(m, denom, value=-param_group["lr"] / (1 - beta1**t))

    # --- the compressed all-reduce -----------------------------------------------------------
    def compressed_allreduce(self, momentum: torch.Tensor) -> torch.Tensor:
        """Average the flat ``momentum`` of all ranks through 1-bit worker and server compression.

        Updates :attr:`worker_error` and :attr:`server_error`; returns the average (the same on
        every rank, bit for bit).
        """
        p, r = dist.get_world_size(self.group), dist.get_rank(self.group)
        d = momentum.numel()
        chunk = -(-d // (8 * p)) * 8  # elements per server chunk: whole bytes of signs
        if self.worker_error is None or self.server_error is None:
            self.worker_error = torch.zeros_like(momentum)
            self.server_error = torch.zeros(chunk, dtype=momentum.dtype, device=momentum.device)
        # a. worker compression with error feedback
        corrected = momentum + self.worker_error
        scale = (corrected.norm() / math.sqrt(max(d, 1))).reshape(1)
        signs = corrected >= 0
        self.worker_error = corrected - _signed(signs, scale)
        padded = torch.zeros(p * chunk, dtype=torch.bool, device=momentum.device)
        padded[:d] = signs
        packed = pack_signs(padded).view(p, chunk // 8)
        # b. all-to-all of the sign chunks (all p - 1 messages in flight at once), scales gathered
        received = torch.empty_like(packed)
        received[r].copy_(packed[r])
        works = []
        for shift in range(1, p):
            dst, src = (r + shift) % p, (r - shift) % p
            works += [isend(packed[dst], dst, self.group), irecv(received[src], src, self.group)]
        wait_all(works)
        worker_scales = ring_allgather(scale, self.group)  # (p, 1)
        # c. server: average chunk r of every worker, compress again with the server error
        length = max(0, min(chunk, d - r * chunk))
        decoded = _signed(unpack_signs(received)[:, :length], worker_scales)
        corrected_s = decoded.sum(0) / p + self.server_error[:length]
        server_scale = (corrected_s.norm() / math.sqrt(max(length, 1))).reshape(1)
        server_signs = corrected_s >= 0
        self.server_error[:length] = corrected_s - _signed(server_signs, server_scale)
        chunk_bits = torch.zeros(chunk, dtype=torch.bool, device=momentum.device)
        chunk_bits[:length] = server_signs
        # d. every rank collects every server chunk
        all_signs = ring_allgather(pack_signs(chunk_bits), self.group)  # (p, chunk / 8)
        all_scales = ring_allgather(server_scale, self.group)  # (p, 1)
        return _signed(unpack_signs(all_signs), all_scales).reshape(-1)[:d]

    # --- checkpoints -------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """torch's optimizer state plus the step count and both error buffers."""
        state = super().state_dict()
        state["onebit"] = {
            "steps_taken": self.steps_taken,
            "warmup_steps": self.warmup_steps,
            "worker_error": None if self.worker_error is None else self.worker_error.clone(),
            "server_error": None if self.server_error is None else self.server_error.clone(),
        }
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned (error buffers move to the params' device)."""
        state_dict = dict(state_dict)
        extra = state_dict.pop("onebit", None)
        if not isinstance(extra, dict) or set(extra) != {
            "steps_taken",
            "warmup_steps",
            "worker_error",
            "server_error",
        }:
            raise ValueError(
                "OneBitAdam.load_state_dict: state_dict['onebit'] must hold steps_taken, "
                "warmup_steps, worker_error and server_error (use OneBitAdam.state_dict())"
            )
        super().load_state_dict(state_dict)
        device = self.param_groups[0]["params"][0].device
        self.steps_taken = int(extra["steps_taken"])
        self.warmup_steps = int(extra["warmup_steps"])
        for name in ("worker_error", "server_error"):
            value = extra[name]
            setattr(self, name, None if value is None else value.clone().to(device))
