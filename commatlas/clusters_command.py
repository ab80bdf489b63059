"""``commatlas clusters``: the cluster presets with GPU, NICs, transport and every source.

``--json`` prints ``[{"name", "title", "gpu", "gpus_per_node", "nics_per_node", "nic_gbit",
"transport", "fabric", "sharp", "cpu_vendor", "estimates", "sources", "note"}]``; ``NAME``
prints one preset with its sources in full.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict

from commatlas.cli_types import nonempty
from costmodels.safe_output import json_text


def run_clusters(args: argparse.Namespace) -> int:
    from costmodels.hardware.cluster_presets import CLUSTERS
    from costmodels.hardware.clusters import get_cluster

    try:
        presets = [get_cluster(args.name)] if args.name else list(CLUSTERS.values())
    except ValueError as exc:
        print(f"commatlas clusters: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json_text([asdict(p) for p in presets]))
        return 0
    if not args.name:
        print(f"{'name':20s} {'GPU':14s} {'GPUs/node':>9s} {'NICs':>5s} {'Gbit/s':>7s}  "
              "transport")  # fmt: skip
        for p in presets:
            extra = " + SHARP" if p.sharp else ""
            print(f"{p.name:20s} {p.gpu:14s} {p.gpus_per_node:9d} {p.nics_per_node:5d} "
                  f"{p.nic_gbit:7g}  {p.transport}{extra}")  # fmt: skip
        print("sources: commatlas clusters NAME (or --json); explicit flags override a preset")
        return 0
    p = presets[0]
    print(f"{p.name}: {p.title}\n  {p.summary()}")
    if p.fabric:
        print(f"  node fabric: {p.fabric}")
    for what, source in p.sources.items():
        print(f"  {what}: {source}")
    if p.estimates:
        print(f"  not confirmed in a stored source: {', '.join(p.estimates)}")
    if p.note:
        print(f"  note: {p.note}")
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Register ``clusters`` on the ``commatlas`` subparsers."""
    cmd = sub.add_parser("clusters", help="list the cluster presets and their sources")
    cmd.add_argument("name", nargs="?", type=nonempty(80), metavar="NAME",
                     help="one preset, with its sources in full")  # fmt: skip
    cmd.add_argument("--json", action="store_true",
                     help="the presets as JSON, every field with its source")  # fmt: skip
    cmd.set_defaults(run=run_clusters)
