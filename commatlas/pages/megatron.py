"""The docs page comparing predicted and published Megatron-LM throughput (Narayanan et al.).

Computed at build time by costmodels.llm.megatron_table (the same code the tests check), so
every number on the page comes from the model, none is typed in.
"""

from __future__ import annotations

from costmodels.llm.megatron_table import validate_megatron


def megatron_page(validated: tuple | None = None) -> str:
    """The page; ``validated`` is ``validate_megatron()``'s result when the caller has it."""
    rows, mean_error = validated or validate_megatron()
    lines = [
        "# Validation: large-model training (Megatron-LM)",
        "",
        "Narayanan et al., *Efficient large-scale language model training on GPU clusters using",
        "Megatron-LM* (SC'21, arXiv:2104.04473), Table 1, report the throughput per GPU of GPT",
        "models from 1.7B to 1T parameters on up to 3072 A100 GPUs. CommAtlas predicts each row",
        "from the model shape, the row's tensor/pipeline/data-parallel layout and an A100-80GB",
        "cluster (8 GPUs per node, NVLink 300 GB/s per direction, one 200 Gb/s HDR link per GPU),",
        "with full recomputation as in the paper; nothing is tuned per row. Reproduce with",
        "`validate_megatron()` of `costmodels.llm.megatron_table`.",
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
        "The two smallest models come out too fast: the GEMM-efficiency curve of",
        "costmodels/llm/compute.py is an estimate that credits narrow matrices with more of the",
        "peak than the paper measured end to end.",
        "",
    ]
    return "\n".join(lines)
