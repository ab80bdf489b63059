"""The guide 'Which cloud network is my cluster?': its table rows recomputed independently and its
claims held against the models they quote."""

from __future__ import annotations

import re

import pytest

from commatlas.docs_site.guides import cloud_networks as guide
from costmodels.hardware.cluster_presets import CLUSTERS
from costmodels.nccl.node_topologies import ring_capacity
from costmodels.nccl.presets import cluster_system
from costmodels.nccl.scaling import network_share
from costmodels.nccl.transports import TRANSPORTS
from costmodels.nccl.tuner import collective_time
from taxonomy import load_taxonomy


@pytest.fixture(scope="module")
def text() -> str:
    return guide.page_text(load_taxonomy())


def test_every_preset_has_its_row_recomputed(text: str) -> None:
    for name, preset in CLUSTERS.items():
        row = next(line for line in text.splitlines() if line.startswith(f"| `{name}` |"))
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        for nodes, cell in zip(guide.NODES, cells[-len(guide.NODES) :], strict=True):
            system = cluster_system(name, nodes * preset.gpus_per_node)
            busbw = float(collective_time("all-reduce", [guide.SIZE], system).busbw_Bps[0])
            assert cell == f"{busbw / 1e9:.0f}", (name, nodes)


def test_claims_match_the_models(text: str) -> None:
    assert set(guide.LOG_LINES) == set(TRANSPORTS)
    assert f"{network_share('efa', 4):.2f}" == "0.59" and "0.59 of the 2-node" in text
    assert f"{network_share('efa', 64):.2f}" == "0.11" and "0.11 at 64" in text
    assert [ring_capacity("dgx1", g)[0] / 1e9 for g in (2, 4, 8)] == pytest.approx([40, 80, 120])
    assert "(40 GB/s), four 80 GB/s, eight 120 GB/s" in text
    assert ring_capacity("pcie-dual-root", 8)[0] == 10e9 and "ring at 10 GB/s" in text
    errors = [float(x) for x in re.findall(r"(\d+\.\d) %", text.split("## How close")[1])]
    assert errors and max(errors) < 20
    assert "**The question.**" in text and "## Reproduce these numbers" in text
