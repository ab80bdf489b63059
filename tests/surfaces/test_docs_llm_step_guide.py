"""The operator-model guide (generated/guides/llm-step-time.md): its numbers are the model's and
its claims hold; the same structural rules as the other guides (question, reproduction, links,
commands that parse)."""

from __future__ import annotations

import re
import shlex

import pytest

from commatlas.docs_site.guides import _common as c
from commatlas.docs_site.guides import llm_step_time as g
from costmodels.llm.step import predict_step


@pytest.fixture(scope="module")
def text() -> str:
    return g.page_text(None)


def test_structure_links_and_commands(text: str) -> None:
    from commatlas.cli import build_parser

    assert text.startswith("# ") and "**The question.**" in text[:600]
    assert "## Reproduce these numbers" in text and not re.search(r"\bnan\b|\binf\b", text)
    assert all(t in c.SIBLING_PAGES for t in c.LINK.findall(text))
    shown = re.findall(r"`(commatlas [^`]+)`", text[text.index("## Reproduce these numbers") :])
    assert shown
    for cmd in shown:
        build_parser().parse_args(shlex.split(cmd)[1:])


def test_step_row_and_claims(text: str) -> None:
    step = predict_step(g.shape(), g.STEP_LAYOUT, g.cluster(), precision="fp8")
    assert f"| megatron | fp8 | {step.compute_breakdown_s['gemm']:.3g} |" in text
    assert f"{step.iteration_time_s:.3g} s, less than the 2x" in text
    gemm = sum(k.flops for k in g.layer_kernels(g.shape(), g.shard(), "bf16",
                                                g.get_kernel_set("megatron")).forward
               if k.category == "gemm")  # fmt: skip
    assert gemm == pytest.approx(g.hand_gemm_flops(), rel=1e-12)
    bf16 = predict_step(g.shape(), g.STEP_LAYOUT, g.cluster())
    assert step.iteration_time_s < bf16.iteration_time_s < 2 * step.iteration_time_s
