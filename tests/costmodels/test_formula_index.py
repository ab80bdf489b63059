"""The registry builds one formula family per model asked for (issue 30, item 12), so the index
it reads must name the module that defines each model, and a family loaded alone must be the
same objects as in the full list."""

from __future__ import annotations

import subprocess
import sys
from importlib import import_module

from costmodels.formulas import MODELS
from costmodels.formulas._lazy import models_of
from costmodels.formulas.index import MODULE_OF


def test_each_index_entry_names_the_module_that_defines_the_model() -> None:
    for model_id, module in MODULE_OF.items():
        assert model_id in {m.id for m in models_of(import_module(module))}, (model_id, module)


def test_the_index_names_only_real_models_and_the_full_list_keeps_its_order() -> None:
    """A model missing from the index still works (the registry then builds every family), so
    a new family needs no entry to be correct, only to be fast."""
    ids = [m.id for m in MODELS]
    assert len(ids) == len(set(ids)) and set(MODULE_OF) <= set(ids)
    assert ids[:4] == ["ring-allreduce", "parameter-server", "topk-sparsification", "local-sgd"]


def test_one_model_builds_its_family_only() -> None:
    code = (
        "import sys, costmodels; costmodels.get('ring-allreduce'); "
        "print(sorted(m for m in sys.modules if m.startswith('costmodels.formulas.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)  # fmt: skip
    loaded = eval(done.stdout)  # a list of module names printed by the child
    assert "costmodels.formulas.ring_allreduce" in loaded
    assert not any(name.startswith(("costmodels.formulas.nccl", "costmodels.formulas.recent"))
                   for name in loaded)  # fmt: skip
    import costmodels

    assert costmodels.get("nvls") is next(m for m in MODELS if m.id == "nvls")
