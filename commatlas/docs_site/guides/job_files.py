"""Guide: start from your job's config (issue 41). One real public job file per framework
(tests/data/jobfiles, sources and licences in SOURCES.md there) is read and priced at build time
by ``commatlas predict-llm --from`` itself, and a plan is written back with ``plan-llm --emit``
and read again, so every table and number on the page is what the command prints today."""

from __future__ import annotations

import contextlib
import io
import json
import shlex
from functools import cache
from pathlib import Path
from typing import Any

from commatlas.docs_site import Files
from commatlas.docs_site.guides import _common as c
from taxonomy import Taxonomy

SLUG = "job-files"
ROOT = Path(__file__).resolve().parents[3]
DATA = "tests/data/jobfiles"
_TT = "https://github.com/pytorch/torchtitan/blob/238fa9953e4aec2a62582121564273d7cbb1e9f1/"
_MG = "https://github.com/NVIDIA/Megatron-LM/blob/d98e8a64ddf34856e74b24714e3bedb2f5a39553/"
_DS = ("https://github.com/deepspeedai/DeepSpeedExamples/blob/"
       "45b4b7156c8794a3452a5a7d03dbd8d797068569/")  # fmt: skip
_AC = "https://github.com/huggingface/accelerate/blob/16cb6eb80dd9aa8b4df1a63ef57863e455d53b83/"
#: framework, shipped file, its public source, the flags given beside it (what the file lacks)
EXAMPLES = [
    ("torchtitan", "torchtitan/llama3_70b.toml",
     _TT + "torchtitan/models/llama3/train_configs/llama3_70b.toml",
     ["--dp", "8", "--gpu", "h100"]),
    ("Megatron-LM", "megatron/train_llama3_8b_h100_fp8.sh",
     _MG + "examples/llama/train_llama3_8b_h100_fp8.sh", ["--gpu", "h100"]),
    ("DeepSpeed", "deepspeed/bf16_master_weight_baseline.json",
     _DS + "training/bf16_master_weight/configs/baseline.json",
     ["--model", "llama-3.2-3b", "--dp", "8", "--gpu", "h100"]),
    ("Accelerate FSDP", "accelerate/config_yaml_templates_fsdp.yaml",
     _AC + "examples/config_yaml_templates/fsdp.yaml",
     ["--model", "llama-3.2-3b", "--global-batch", "8", "--gpu", "h100"]),
]  # fmt: skip
SERVE_PLAN = ["plan-serving", "--model", "llama-3.1-8b", "--gpus", "h100", "--tp", "1,2",
              "--slo-ttft-p90", "2 s", "--slo-tpot-p99", "50 ms", "--prompt-len", "1024",
              "--output-len", "128", "--requests", "100", "--top", "2"]  # fmt: skip
PLAN = ["plan-llm", "--model", "llama-3.1-8b", "--gpus", "16", "--global-batch", "64",
        "--gpu", "h100", "--framework", "pytorch", "--top", "1"]  # fmt: skip


def run(argv: list[str]) -> str:
    """What ``commatlas ARGV`` prints (stderr dropped); a failure stops the build."""
    from commatlas.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(argv)
    if code != 0:
        raise RuntimeError(f"commatlas {' '.join(argv)} exited {code}")
    return out.getvalue()


@cache
def example(name: str, beside: tuple[str, ...]) -> dict[str, Any]:
    """predict-llm --from on a shipped file, as JSON."""
    return json.loads(run(["predict-llm", "--from", str(ROOT / DATA / name), *beside, "--json"]))


@cache
def emitted() -> tuple[str, dict[str, Any], dict[str, Any]]:
    """The torchtitan TOML plan-llm writes, the plan's first row and the step read back."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "plan.toml"
        (row,) = json.loads(run([*PLAN, "--json", "--emit", "torchtitan", "--emit-file",
                                 str(path)]))  # fmt: skip
        text = path.read_text(encoding="utf-8")
        again = json.loads(run(["predict-llm", "--from", str(path), "--gpu", "h100", "--json"]))
    return text, row, again


def _example_lines(framework: str, name: str, source: str, beside: list[str]) -> list[str]:
    out = example(name, tuple(beside))
    report = out["job_file"]
    rows = [[f"`{r['key']}`", f"`{r['flag']} {r['value']}`", "read"] for r in report["read"]]
    rows += [[f"({r['why']})", f"`{r['flag']} {r['value']}`", "assumed"]
             for r in report["assumed"]]  # fmt: skip
    fits = "fits" if out["fits"] else "does not fit"
    return [
        f"### {framework}",
        "",
        f"[`{name.split('/')[-1]}`]({source}), read with",
        "",
        "```",
        f"commatlas predict-llm --from {DATA}/{name} {' '.join(beside)}",
        "```",
        "",
        *c.table(["in the file", "becomes", "how"], rows),
        f"{len(report['ignored'])} fields ignored, each with its reason (e.g. "
        f"`{report['ignored'][0]['key']}`: {report['ignored'][0]['why']}). "
        f"Predicted: {c.format_seconds(out['iteration_time_s'])} per step, "
        f"{out['memory_per_gpu_bytes'] / 2**30:.1f} GiB per GPU ({fits}), "
        f"MFU {out['mfu_pct']:.1f} %.",
        "",
    ]


@cache
def serve_text() -> str:
    """The vLLM command plan-serving writes for Llama 3.1 8B on H100s."""
    return run(SERVE_PLAN + ["--emit", "vllm"]).strip()


def page_text() -> str:
    text, row, again = emitted()
    lines = [
        "# Start from your job's config",
        "",
        "**The question.** You already have a job: a torchtitan TOML, a Megatron-LM launch "
        "script, a DeepSpeed `ds_config.json` or an Accelerate FSDP YAML. How long will its step "
        "take and how much memory will it need on another cluster, without translating 20-40 "
        "settings into flags by hand? And once `plan-llm` has found a faster layout, how do you "
        "get it back into your framework?",
        "",
        "`--from FILE` on `predict-llm` and `plan-llm` reads the file (by its suffix: `.toml` "
        "torchtitan, `.json` DeepSpeed, `.yaml` Accelerate, anything else a Megatron-LM command "
        "line or script) into the same flags a user would type. Flags given beside it win. The "
        "output lists every field read, every default assumed and every field ignored with its "
        "reason (under `job_file` in `--json`); an unknown key is a warning line naming it, a "
        "contradiction (a global batch that does not split over the ranks, degrees that do not "
        "multiply to the GPU count) an error line naming the key and the file.",
        "",
        "What a file does not say comes from flags: torchtitan's `data_parallel_shard_degree = "
        "-1` and a DeepSpeed config leave the GPU count open (`--dp`), DeepSpeed and Accelerate "
        "configs name no model (`--model`, `--hf-config`, or a `config.json` beside the file), "
        "and the cluster is always `--gpu` / `--cluster`.",
        "",
        "## One real example per framework",
        "",
    ]
    for framework, name, source, beside in EXAMPLES:
        lines += _example_lines(framework, name, source, beside)
    lines += [
        "## Writing the plan back",
        "",
        "`plan-llm --emit torchtitan|megatron|deepspeed --emit-file FILE` writes the fastest "
        "layout with the same fields the readers read. For Llama 3.1 8B on 16 H100s:",
        "",
        "```",
        "commatlas " + " ".join(PLAN) + " --emit torchtitan --emit-file plan.toml",
        "```",
        "",
        "```toml",
        text.rstrip(),
        "```",
        "",
        f"Read back with `predict-llm --from plan.toml --gpu h100` it prices "
        f"{c.format_seconds(again['iteration_time_s'])} per step, the plan's own "
        f"{c.format_seconds(row['iteration_time_s'])} (tests/surfaces/test_job_files_emit.py "
        "holds the round trip for every format). A layout a framework cannot express (ZeRO-1 "
        "in torchtitan, FSDP in Megatron-LM, tensor parallelism in plain DeepSpeed) is refused "
        "in one line naming the choice to search instead. A DeepSpeed config is priced as "
        "`--framework deepspeed` with its `zero_optimization` bucket sizes, stage-3 prefetch "
        "and persistence knobs and `overlap_comm` read into the `--ds-*` flags; a Megatron-LM "
        "command with `--use-megatron-fsdp` as `--framework megatron-fsdp`.",
        "",
        "## What is not read",
        "",
        "- CPU/NVMe offload is listed as ignored: the step model does not price it.",
        "- A Megatron launch script's flags are read wherever they stand (both branches of an "
        "`if`); only literal `NAME=value` variables are filled in.",
        "- Megatron-Bridge recipes are Python and are not read; their override YAML files "
        "(ConfigContainer sections: model, train, ddp, dist, mixed_precision) are, with the "
        "model and the GPU count given as flags.",
        "",
        "## Serving: vLLM, SGLang and TensorRT-LLM",
        "",
        "`predict-serving --from serve.sh` reads a `vllm serve MODEL ...`, `python -m "
        "sglang.launch_server ...` or `trtllm-serve MODEL ... --extra_llm_api_options FILE` "
        "command, or a TensorRT-LLM options YAML alone (TensorRT-LLM's own examples/configs "
        "and serve commands from vLLM's and SGLang's own docs and examples, listed in "
        f"{DATA}/SOURCES.md, are read in tests/surfaces/test_job_files_serving.py), with "
        "tensor, pipeline and "
        "expert parallelism (attention DP as EP groups), weight "
        "quantization, KV-cache dtype, CUDA graphs off, the scheduler's sequence cap, token "
        "budget and block size; a Hugging Face id becomes a preset, a local folder its "
        "config.json), and `plan-serving --emit vllm|sglang|trtllm --emit-file FILE` writes the "
        "first deployment that meets the targets back as such a command. For example:",
        "",
        "```",
        serve_text(),
        "```",
        "",
        *c.reproduce(
            [f"- `commatlas predict-llm --from {DATA}/{name} {' '.join(beside)} --json`"
             for _, name, _, beside in EXAMPLES]
            + ["- `commatlas " + " ".join(PLAN) + " --emit torchtitan --emit-file plan.toml`",
               "- `commatlas " + shlex.join([*SERVE_PLAN, "--emit", "vllm"]) + "`"]
        ),  # fmt: skip
    ]
    return "\n".join(lines)


def files(tax: Taxonomy) -> Files:
    return {f"generated/guides/{SLUG}.md": page_text()}
