"""Issue 35: a ``--calibration`` file is read with the bounded YAML loader and every absurd
figure is refused with the field it sits in (no "inf %", no ``true`` read as 1, no unknown GPU,
no 10^9 GPUs per node)."""

from __future__ import annotations

import pytest

from costmodels.calibration.trace.calibration_file import (
    CalibrationError,
    calibration_from_yaml,
    calibration_to_yaml,
    load_calibration,
)
from costmodels.calibration.trace.importer import import_traces
from tests.costmodels.trace_fixtures import WITH_ARGS


@pytest.fixture(scope="module")
def text() -> str:
    return calibration_to_yaml(import_traces([WITH_ARGS])[1])


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("  gemm_operators: 0", "  gemm_operators: true", "compute.gemm_operators: true/false"),
        ("  gemm_scale: null", "  gemm_scale: 1.0e+308", "compute.gemm_scale"),
        ("  preset: A100 40GB SXM", "  preset: banana-9000", "gpu.preset: unknown GPU"),
        ("gpus_per_node: 8", "gpus_per_node: 1000000000", "gpus_per_node"),
        ("world_size: 2\n", "world_size: .inf\n", "world_size"),
        ("overlap_fraction:", "overlap_fraction: 7.0\nx_overlap:", "overlap_fraction"),
    ],
)
def test_absurd_figures_are_refused_with_their_field(text, old, new, field) -> None:
    assert old in text
    with pytest.raises(CalibrationError, match="cal.yaml: ") as info:
        calibration_from_yaml(text.replace(old, new, 1), "cal.yaml")
    assert field in str(info.value) and "\n" not in str(info.value)


def test_the_bounded_loader_stops_value_and_alias_floods(tmp_path, text) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("kind: commatlas-calibration\nx: [" + ",".join(["1"] * 250_000) + "]\n")
    aliases = tmp_path / "aliases.yaml"
    aliases.write_text("kind: commatlas-calibration\na: &a [1]\nb: [" + ",".join(["*a"] * 250_000)
                       + "]\n")  # fmt: skip
    for path in (values, aliases):
        with pytest.raises(CalibrationError, match="more than 200,000 YAML values"):
            load_calibration(path)
    bom = tmp_path / "bom.yaml"
    bom.write_text("\ufeff" + text)  # a byte-order mark is skipped, not read as part of a key
    assert load_calibration(bom).kind == "commatlas-calibration"
