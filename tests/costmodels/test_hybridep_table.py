"""Issue 39: --moe-dispatcher hybridep priced from NVIDIA's published HybridEP tables
(costmodels/data/hybridep-nvidia.csv): the two constants its B200 node fixes, by hand, and the
GB200 NVL72 rows it does not fix checked against the model."""

from __future__ import annotations

import pytest

from costmodels.llm.hybridep_table import hybridep_rows
from costmodels.llm.moe_dispatch import (
    DEEPEP_NVLINK_EFFICIENCY,
    HYBRIDEP_FP8_BYTES,
    HYBRIDEP_NVLINK_EFFICIENCY,
)


def test_constants_from_the_b200_rows_by_hand() -> None:
    # bf16 dispatch and combine as HybridEP counts them (the 1/8 a rank keeps included) over
    # B200's NVLink as NCCL counts it; fp8 dispatch at 409.71 where bf16 ran 535.94
    assert HYBRIDEP_NVLINK_EFFICIENCY == pytest.approx((535.94 + 530.86) / 2 * 7 / 8 / 721.8,
                                                       abs=1e-4)  # fmt: skip
    assert HYBRIDEP_FP8_BYTES == pytest.approx((1 + 4 / 128) * 535.94 / 409.71, abs=1e-3)
    assert HYBRIDEP_NVLINK_EFFICIENCY < DEEPEP_NVLINK_EFFICIENCY  # below DeepEP's H800 share


def test_every_row_priced_and_the_nvl72_rows_it_does_not_fix() -> None:
    rows = hybridep_rows()
    assert len(rows) == 27
    fixed = [r for r in rows if r.fixed_by]
    assert {r.platform for r in fixed} == {"B200"} and all(abs(r.error) < 0.03 for r in fixed)
    nvl72 = [r for r in rows if r.platform == "GB200"]
    assert len(nvl72) == 15 and all(r.metric == "GB/s (NVLink)" for r in nvl72)
    assert max(abs(r.error) for r in nvl72) < 0.16
    # the H100 network rows are a check the model does not pass at two nodes (it says so)
    h100 = [r for r in rows if r.platform == "H100"]
    assert all(r.metric == "GB/s (RDMA)" and r.error > 0 for r in h100)
