"""The shipped Megatron-on-Hopper tensor rate is what its fit gives, and the fit holds out.

costmodels/validation/megatron_hopper_fit.py fits ``megatron_hopper_tensor_rate`` on every other
DGX Cloud row; the rows it did not see (the other half) must come out better than with the rate
at its default, else the constant has not earned its place, and runs of other stacks (llm-foundry's
PyTorch FSDP) must not move at all.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from costmodels.llm.constants import MEGATRON_HOPPER_DATA, default_constants
from costmodels.validation.corpus import load_corpus
from costmodels.validation.megatron_hopper_fit import fit_megatron_hopper, mean_abs_pct, unfitted


@pytest.fixture(scope="module")
def fitted():
    return fit_megatron_hopper()


def test_shipped_values_are_the_fit(fitted) -> None:
    shipped = json.loads(MEGATRON_HOPPER_DATA.read_text())["constants"]
    assert shipped.keys() == fitted.constants.keys()
    for name, value in fitted.constants.items():
        assert shipped[name] == pytest.approx(value, rel=1e-3), name
        assert getattr(default_constants(), name) == shipped[name]


def test_rows_the_fit_did_not_see_improve(fitted) -> None:
    dgxc = load_corpus(("dgxc",))
    assert not set(fitted.fit_rows) & set(fitted.hold_rows)
    assert sorted(fitted.fit_rows + fitted.hold_rows) == list(range(len(dgxc)))
    before, after = unfitted(), replace(unfitted(), **fitted.constants)
    held = [dgxc[i] for i in fitted.hold_rows]
    assert mean_abs_pct(held, after) < mean_abs_pct(held, before) - 1.0
    fp8 = [r for r in load_corpus(("llmfoundry",)) if r.options["precision"] == "fp8"]
    assert len(fp8) >= 5
    assert mean_abs_pct(fp8, after) == mean_abs_pct(fp8, before)
