"""The eager optimizer update (costmodels.dp.optimizer_step) against hand computation, and the
optimizer each of Shi et al.'s scripts steps (HKBU-HPML/ddl-benchmarks, read when written)."""

from __future__ import annotations

import pytest

from costmodels.dp.optimizer_step import step_change_s, update_seconds
from costmodels.dp.validation_rows import Row
from costmodels.dp.validation_testbed import optimizer_change_s, script_optimizer

BW = 616e9  # RTX 2080 Ti memory bandwidth; 0.8 of it streams


def test_big_tensor_is_memory_bound_small_one_launch_bound() -> None:
    big, tiny = 4e8, 8.0  # 1e8 fp32 values; two values
    adam = update_seconds([big, tiny], "adam", BW)
    sgd = update_seconds([big, tiny], "sgd", BW)
    # Adam: 1e8 x 72 B / (0.8 x 616 GB/s) = 14.61 ms; the tiny tensor 7 launches x 10 us
    assert adam.seconds == pytest.approx(1e8 * 72 / (0.8 * BW) + 70e-6, rel=1e-12)
    # SGD: 1e8 x 12 B / 492.8 GB/s = 2.435 ms; the tiny tensor one launch
    assert sgd.seconds == pytest.approx(1e8 * 12 / (0.8 * BW) + 10e-6, rel=1e-12)
    assert adam.tensors == sgd.tensors == 2
    assert step_change_s([big, tiny], "adam", "sgd", BW) == pytest.approx(
        sgd.seconds - adam.seconds)


def test_bad_optimizer_and_bandwidth_are_refused() -> None:
    with pytest.raises(ValueError, match="optimizer must be one of sgd, adam"):
        update_seconds([4.0], "lamb", BW)
    with pytest.raises(ValueError, match="memory_Bps must be positive"):
        update_seconds([4.0], "sgd", 0.0)


def test_scripts_optimizers_and_the_rows_step_change() -> None:
    # byteps/bert_benchmark.py: optim.SGD; mgwfbp/ and horovod/: transformers.AdamW;
    # bytescheduler/: optim.Adam; every imagenet_benchmark.py: optim.SGD
    assert script_optimizer("BERT-Base", "WFBP-PS") == "sgd"
    assert script_optimizer("BERT-Large", "BSP-PS") == "sgd"
    assert script_optimizer("BERT-Base", "MG-WFBP") == "adam"
    assert script_optimizer("BERT-Large", "ByteScheduler-A2A") == "adam"
    assert script_optimizer("ResNet-50", "WFBP-A2A") == "sgd"
    ps = Row("BERT-Base", 64, "10GbE with TCP/IP", "WFBP-PS", 8, 657.4, 212.8)
    change = optimizer_change_s(ps)
    # single GPU taken with Adam; BytePS's SGD saves 60 B per value of BERT-Base's 110M (~13 ms at
    # 492.8 GB/s) plus six launches on each small tensor: between 13 and 30 ms less
    assert -0.030 < change < -0.013
    same = Row("BERT-Base", 64, "10GbE with TCP/IP", "MG-WFBP", 8, 611.4, 212.8)
    assert optimizer_change_s(same) == 0.0
    resnet = Row("ResNet-50", 64, "10GbE with TCP/IP", "WFBP-PS", 8, 2021.4, 253.1)
    assert optimizer_change_s(resnet) == 0.0  # SGD on one GPU and in every ResNet-50 script
