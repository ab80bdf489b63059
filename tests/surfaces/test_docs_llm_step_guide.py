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


def test_fsdp_and_memory_sections_are_the_models(text: str, capsys) -> None:
    """Issue 26: the FSDP2 overlap table and the memory worked example are computed by the
    model, and the commands the guide prints reproduce them."""
    import json

    from commatlas.cli import main
    from commatlas.docs_site.guides import llm_step_fsdp_memory as fm

    steps = fm.fsdp_steps()
    rates = [steps[n].tokens_per_s_per_gpu for n in fm.FSDP_GPUS]
    assert rates == sorted(rates, reverse=True)  # ZeRO-3 at a fixed batch: falling per GPU
    assert "| 64 | 4 |" in text and f"{steps[64].tokens_per_s_per_gpu:.0f} |" in text
    run, step = fm.memory_run()
    assert f"Total {step.memory_per_gpu_bytes / 2**30:.2f} GiB" in text
    assert sum(step.memory_breakdown_bytes.values()) == pytest.approx(step.memory_per_gpu_bytes)
    lines = fm.reproduce_lines()
    for line, want in ((lines[0], steps[64]), (lines[1], step)):
        command = shlex.split(re.search(r"`commatlas ([^`]+)`", line).group(1))
        assert main(command) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["iteration_time_s"] == pytest.approx(want.iteration_time_s, rel=1e-9)
        assert out["memory_breakdown_bytes"] == pytest.approx(want.memory_breakdown_bytes)


def test_rowwise_section_says_why_it_lands_on_bf16(text: str) -> None:
    """Issue 42, item 7: rowwise FP8 came out no faster than BF16 with no word why. The section's
    numbers are the model's and its mechanism holds: rowwise saves GEMM time and spends it on
    casts about twice tensorwise's, so it is slower than tensorwise."""
    from commatlas.docs_site.guides.llm_fp8_rowwise import rowwise_steps

    steps = rowwise_steps(g.shape(), g.STEP_LAYOUT, g.cluster())
    bf16, tensorwise, rowwise = steps.values()
    part = text[text.index("## Float8 rowwise against BF16") :]
    assert f"| float8 rowwise | {rowwise.compute_breakdown_s['gemm'] * 1e3:,.0f} |" in part
    assert "torchtitan issue 1207" in part and "auto filter" in part
    assert rowwise.compute_breakdown_s["gemm"] < bf16.compute_breakdown_s["gemm"]
    saved = bf16.compute_breakdown_s["gemm"] - rowwise.compute_breakdown_s["gemm"]
    casts = {name: s.compute_breakdown_s["memory_bound"] - bf16.compute_breakdown_s["memory_bound"]
             for name, s in (("tensorwise", tensorwise), ("rowwise", rowwise))}  # fmt: skip
    assert (
        f"Rowwise saves {saved * 1e3:,.0f} ms of GEMM time and spends {casts['rowwise'] * 1e3:,.0f}"
        in part
    )
    assert 1.6 < casts["rowwise"] / casts["tensorwise"] < 2.5  # both dimensions' amax
    assert tensorwise.iteration_time_s < rowwise.iteration_time_s
    if abs(bf16.iteration_time_s / rowwise.iteration_time_s - 1) < 0.02:
        assert "Rowwise comes out no faster than BF16" in part
