"""Argument readers of ``commatlas collective``: sizes as people type them, --nodes, and
--gpus-per-process (issue 40). Each raises ValueError naming the flag."""

from __future__ import annotations

import argparse
import re
from typing import Any

from costmodels.limits import MAX_BYTES, MAX_GPUS

_NCCL_TESTS_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([kKmMgG]?)\s*$")
_BINARY = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30}


def read_size(text: str) -> float:
    """nccl-tests' spelling with its suffix (src/common.cu parsesize: 1K, 64M, 1G; K/M/G are
    binary) or a unit string costmodels.units reads ('1 MB', '1 GiB'); a plain number, which
    nccl-tests would take as bytes, needs its unit as everywhere."""
    from costmodels.units import BYTE, needs_unit, parse_bytes

    match = _NCCL_TESTS_SIZE.match(text)
    if match and not match.group(2):  # nccl-tests reads "8" as bytes; we ask for the unit
        raise needs_unit(text, "--sizes", BYTE)
    value = (float(match.group(1)) * _BINARY[match.group(2).lower()] if match
             else parse_bytes(text, "--sizes"))  # fmt: skip
    if not 0 < value <= MAX_BYTES:
        raise ValueError(f"--sizes: {text!r} must be more than 0 bytes and at most 1 EiB")
    return value


_UNIT_ONLY = re.compile(r"^\s*[A-Za-z]+\s*$")
_DECIMAL_KB = re.compile(r"(?<=[0-9\s])KB\b")


def read_sizes(items: list[str]) -> list[float]:
    """``--sizes`` as people type them: nccl-tests' suffixes (1K, 64M), unit strings ('1 MB'),
    a number and its unit as two words (``--sizes 1 GiB`` arrives as '1', 'GiB') and 'KB' /
    '64KB', taken as decimal kilobytes (1 KB = 1,000 B, as the SI 'kB'; 'KiB' and nccl-tests'
    'K' are 1,024)."""
    joined: list[str] = []
    for text in items:
        if joined and _UNIT_ONLY.match(text) and _NCCL_TESTS_SIZE.match(joined[-1]) and not (
                _NCCL_TESTS_SIZE.match(joined[-1]).group(2)):  # fmt: skip
            joined[-1] = f"{joined[-1]} {text.strip()}"
        else:
            joined.append(text)
    return [read_size(_DECIMAL_KB.sub("kB", text)) for text in joined]


def total_gpus(args: argparse.Namespace, preset: Any) -> int:
    """--gpus, or --nodes x GPUs per node (--gpus-per-node, else the --cluster preset's)."""
    nodes = getattr(args, "nodes", None)
    if nodes is None:
        if args.gpus is None:
            raise ValueError("give --gpus (GPUs in total) or --nodes with --gpus-per-node")
        return args.gpus
    per_node = args.gpus_per_node or (preset.gpus_per_node if preset is not None else None)
    if per_node is None:
        raise ValueError("--nodes needs --gpus-per-node (or a --cluster preset)")
    if nodes * per_node > MAX_GPUS:
        raise ValueError(f"--nodes {nodes:,} x {per_node} GPUs per node is more than "
                         f"{MAX_GPUS:,} GPUs")  # fmt: skip
    if args.gpus is not None and args.gpus != nodes * per_node:
        raise ValueError(f"--gpus {args.gpus} disagrees with --nodes {nodes} x {per_node} GPUs "
                         "per node; give one of them")  # fmt: skip
    return nodes * per_node


def gpus_per_process(text: str, gpus_per_node: int) -> int:
    """--gpus-per-process: a whole number, or 'all' (one process drives every GPU of a node,
    nccl-tests -g G as most published tables were run)."""
    if text.strip().lower() == "all":
        return gpus_per_node
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"--gpus-per-process: expected 1, 2, ... or 'all', got {text!r}") from None
    if not 1 <= value <= gpus_per_node:
        raise ValueError(f"--gpus-per-process: {value} is not from 1 to the {gpus_per_node} GPUs "
                         "of a node")  # fmt: skip
    return value
