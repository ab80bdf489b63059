"""The Compare page says when a method is lossy (issue 30, item 10), and prices compression
kernels for the chosen GPU.

A 100M-parameter model on a 1 GbE-class link: top-k 1 % is fastest, and the page must say it
changes training, name the best lossless method beside it, and mark it in the table and the
charts. The kernels were measured on an H200; on a V100 (900 GB/s against 4.8 TB/s, the
datasheet figures in costmodels/hardware/gpus.py) they take 4.8e12 / 900e9 = 5.3x as long.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from app_helpers import app_test, chart_datasets

ROOT = Path(__file__).parents[2]
run_page = partial(app_test, str(ROOT / "app_pages" / "compare.py"))
SLOW = dict(workload="Custom: parameter count", params="100M", gpu="Other GPU (links only)",
            step="500 ms", batch="16", nodes="4", gpus="1", intra="Custom bandwidth / latency",
            intra_bw="100 GB/s", intra_lat="2 us", inter="Custom bandwidth / latency",
            inter_bw="1 Gbit/s", inter_lat="50 us",
            methods="wfbp/ring,bsp/ring,wfbp/ring+topk:0.01")  # fmt: skip


def test_a_lossy_best_is_said_to_be_lossy_beside_the_best_lossless() -> None:
    at = run_page(**SLOW)
    (banner,) = [s.value for s in at.success]
    assert banner.startswith("Best here (4 GPUs): **WFBP · ring all-reduce + topk:0.01** (lossy")
    assert "(next, the best lossless one: WFBP · ring all-reduce," in banner
    table = at.dataframe[0].value.set_index("method")
    assert table.loc["wfbp/ring+topk:0.01", "lossless"] == "no (lossy)"
    assert table.loc["wfbp/ring", "lossless"] == "yes"
    lines = chart_datasets(at)[0]["lines"]
    lossy = lines.groupby("method")["lossy"].first()
    assert lossy["wfbp/ring+topk:0.01"] and not lossy["wfbp/ring"]
    assert set(lines["name"]) >= {"WFBP · ring all-reduce + topk:0.01 (lossy)"}


def test_the_best_lossless_is_named_when_the_runner_up_is_lossy_too() -> None:
    two = {**SLOW, "methods": "wfbp/ring,wfbp/ring+topk:0.01,wfbp/ring+topk:0.001"}
    (banner,) = [s.value for s in run_page(**two).success]
    assert "(lossy" in banner and ". Best lossless: **WFBP · ring all-reduce**, " in banner


def test_compression_kernels_follow_the_gpu() -> None:
    from costmodels.dp.compression_cost import h200_copy_bandwidth_Bps, kernel_memory_bandwidth

    assert kernel_memory_bandwidth("H200 SXM") is None and kernel_memory_bandwidth(None) is None
    scale = h200_copy_bandwidth_Bps() / kernel_memory_bandwidth("V100 SXM2")
    assert scale == pytest.approx(4.8e12 / 900e9)
    one = dict(nodes="2", gpus="8", workload="Custom: parameter count", params="100M",
               step="100 ms", methods="wfbp/nccl+topk:0.01")  # one 400 MB tensor  # fmt: skip
    fast, slow = run_page(**one, gpu="H200 SXM"), run_page(**one, gpu="V100 SXM2")
    compression = [at.dataframe[1].value["compression (ms)"].iloc[0] for at in (fast, slow)]
    assert compression[1] > 3 * compression[0]  # per-byte time x5.3, the fixed launch cost not
    assert "scaled to the V100 SXM2's memory bandwidth (x5.3 their H200 time" in (
        slow.caption[0].value
    )
