"""The launcher's environment (torchrun, SLURM wrappers, a PyTorchJob), checked before a rank
joins a process group.

``torch.distributed.init_process_group`` reads RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT
(the "env://" rendezvous, https://pytorch.org/docs/stable/distributed.html#environment-variable-
initialization). With values no launcher writes (a rank outside the world, a world of zero ranks,
a port that is not a port) it waits at the rendezvous for peers that can never come, for the
default 30 minutes; :func:`torchrun_env` says what is wrong in one line instead, at once. A
valid environment whose peers have not started yet still waits: that is the rendezvous's job.

Example::

    >>> torchrun_env({"RANK": "5", "WORLD_SIZE": "1", "MASTER_ADDR": "h", "MASTER_PORT": "29500"})
    Traceback (most recent call last):
    ...
    ValueError: RANK=5 is not below WORLD_SIZE=1 (ranks are numbered 0 to WORLD_SIZE-1)
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

TORCHRUN_HINT = (
    "must run under torchrun, one process per rank, e.g. "
    "torchrun --standalone --nproc-per-node=8 -m commatlas.calibrate --out profile.yaml"
)
NAMES = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
_DIGITS = re.compile(r"[0-9]{1,9}")  # ASCII digits only, as every number a user types


@dataclass(frozen=True)
class TorchrunEnv:
    """The checked rendezvous variables of this rank."""

    rank: int
    world_size: int
    master_addr: str
    master_port: int


def _whole(env: Mapping[str, str], name: str) -> int:
    text = env[name].strip()
    if not _DIGITS.fullmatch(text):
        raise ValueError(f"{name}={env[name]!r} is not a whole number")
    return int(text)


def torchrun_env(env: Mapping[str, str] | None = None) -> TorchrunEnv:
    """The rendezvous variables, or ValueError naming the variable and why (missing, not a
    number, RANK >= WORLD_SIZE, WORLD_SIZE < 1, a port outside 1-65535, LOCAL_RANK outside
    LOCAL_WORLD_SIZE)."""
    env = os.environ if env is None else env
    missing = [name for name in NAMES if name not in env]
    if missing:
        raise ValueError(f"{', '.join(missing)} not set")
    world, rank, port = _whole(env, "WORLD_SIZE"), _whole(env, "RANK"), _whole(env, "MASTER_PORT")
    if world < 1:
        raise ValueError(f"WORLD_SIZE={env['WORLD_SIZE']} must be at least 1")
    if rank >= world:
        raise ValueError(
            f"RANK={rank} is not below WORLD_SIZE={world} (ranks are numbered 0 to WORLD_SIZE-1)"
        )
    if not 1 <= port <= 65535:
        raise ValueError(f"MASTER_PORT={port} is not a port (1 to 65535)")
    if not env["MASTER_ADDR"].strip():
        raise ValueError("MASTER_ADDR is empty")
    if "LOCAL_RANK" in env and "LOCAL_WORLD_SIZE" in env:
        local, local_world = _whole(env, "LOCAL_RANK"), _whole(env, "LOCAL_WORLD_SIZE")
        if not local < local_world <= world:
            raise ValueError(
                f"LOCAL_RANK={local} and LOCAL_WORLD_SIZE={local_world} do not fit a world of "
                f"{world} (0 <= LOCAL_RANK < LOCAL_WORLD_SIZE <= WORLD_SIZE)"
            )
    return TorchrunEnv(rank, world, env["MASTER_ADDR"].strip(), port)
