"""The docs page comparing predicted and published Megatron-LM throughput (Narayanan et al.).

Computed at build time by costmodels.llm.megatron_table (the same code the tests check), so
every number on the page comes from the model, none is typed in.
"""

from __future__ import annotations

from costmodels.llm.megatron_table import validate_megatron


def megatron_page(validated: tuple | None = None) -> str:
    """The page; ``validated`` is ``validate_megatron()``'s result when the caller has it."""
    from commatlas.docs_site.validation_corpus import corpus_section
    from commatlas.docs_site.validation_llm import vtrain_section
    from commatlas.docs_site.validation_llm_dev import (
        bands_section,
        families_section,
        transfer_section,
    )

    rows, mean_error = validated or validate_megatron()
    lines = [
        "# Validation: large-model training",
        "",
        "CommAtlas predicts a training step from every kernel of the model (the operator model,",
        "see the guide [Where the time of an LLM training step goes]"
        "(guides/llm-step-time.md)), the communication and the pipeline schedule. Dev",
        "data sets fix its fitted constants; all are shown here against the predictions.",
        "",
        *corpus_section(),
        *families_section(),
        *bands_section(),
        *transfer_section(),
        *vtrain_section(),
        "## Megatron-LM (Narayanan et al., SC'21, Table 1)",
        "",
        "Narayanan et al., *Efficient large-scale language model training on GPU clusters using",
        "Megatron-LM* (SC'21, arXiv:2104.04473), Table 1, report the throughput per GPU of GPT",
        "models from 1.7B to 1T parameters on up to 3072 A100 GPUs. CommAtlas predicts each row",
        "from the model shape, the row's tensor/pipeline/data-parallel layout and an A100-80GB",
        "cluster (8 GPUs per node, NVLink 300 GB/s per direction, one 200 Gb/s HDR link per GPU),",
        "with full recomputation, fp16 and the paper's kernels (`megatron-legacy`: fused",
        "bias-GeLU, bias-dropout-add and scale-mask-softmax, no flash attention) as in the paper;",
        "nothing is tuned per row (the rows are part of the constants' fit, weight 6 each).",
        "Reproduce with `validate_megatron()` of `costmodels.llm.megatron_table` or",
        "`python benchmarks/llm_step_accuracy.py`.",
        "",
        f"**Mean absolute error over {len(rows)} rows: {100 * mean_error:.1f}%**",
        "",
        "![Published and predicted throughput per GPU](plots/validation-llm.svg)",
        "",
        "| Params (B) | TP | PP | GPUs | Batch | Published TFLOP/s per GPU | Predicted | Error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        run = row.run
        lines.append(
            f"| {run.params_billion:g} | {run.tp} | {run.pp} | {run.gpus} | {run.global_batch} | "
            f"{row.published_tflops:.0f} | {row.predicted_tflops:.0f} | {100 * row.error:+.1f}% |"
        )
    lines += [
        "",
        "Before the operator model (issue 16) the mean error was 13.9 %, with the 1.7B and 3.6B",
        "rows 49 % and 29 % too fast: GEMMs alone cannot explain small models, whose",
        "element-wise kernels, unfused attention and host overheads the step now includes.",
        "",
    ]
    return "\n".join(lines)
