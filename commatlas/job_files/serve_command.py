"""A vLLM or SGLang serve command line (``vllm serve MODEL ...``, ``python -m
sglang.launch_server --model-path MODEL ...``) as predict-serving flags (issue 41).

Meanings from the engines' own argument references (vLLM "Engine Arguments", SGLang "Server
Arguments"): the tensor-parallel size, pipeline size, expert parallelism (vLLM's
``--enable-expert-parallel`` spans TP x DP ranks; SGLang's ``--ep-size``), weight quantization
and KV-cache dtype, CUDA graphs off (``--enforce-eager`` / ``--disable-cuda-graph``), and the
scheduler's sequence cap, token budget and KV block size, and DeepEP as the expert exchange
(SGLang ``--moe-a2a-backend deepep`` / ``--enable-deepep-moe``, vLLM ``--all2all-backend
deepep_*``). Data-parallel replicas are priced one at a time; lengths and rates come from the
request flags.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from commatlas.job_files.report import JobFile

#: engine flag -> (dest, int or the constant of a bare flag); both engines' spellings
_READ = {
    "--tensor-parallel-size": ("tp", int), "-tp": ("tp", int), "--tp-size": ("tp", int),
    "--tp": ("tp", int), "--pipeline-parallel-size": ("pp", int), "-pp": ("pp", int),
    "--pp-size": ("pp", int), "--ep-size": ("ep", int), "--ep": ("ep", int),
    "--max-num-seqs": ("max_num_seqs", int), "--max-running-requests": ("max_num_seqs", int),
    "--max-num-batched-tokens": ("max_batched_tokens", int),
    "--chunked-prefill-size": ("max_batched_tokens", int), "--block-size": ("block_size", int),
    "--page-size": ("block_size", int), "--enforce-eager": ("eager", True),
    "--disable-cuda-graph": ("eager", True), "--enable-prefix-caching": ("prefix_caching", True),
    "--no-enable-chunked-prefill": ("no_chunked_prefill", True),
    "--enable-deepep-moe": ("moe_a2a_backend", "deepep"),  # SGLang before --moe-a2a-backend
    # trtllm-serve (TensorRT-LLM's spellings)
    "--tp_size": ("tp", int), "--pp_size": ("pp", int), "--ep_size": ("ep", int),
    "--max_batch_size": ("max_num_seqs", int), "--max_num_tokens": ("max_batched_tokens", int),
}  # fmt: skip
_TEXT = ("--kv-cache-dtype", "--quantization", "-q", "--dtype", "--model", "--model-path",
         "--data-parallel-size", "-dp", "--dp-size", "--dp")  # fmt: skip
_QUANT = {"fp8": "fp8", "modelopt": "fp8", "modelopt_fp4": "fp4", "nvfp4": "fp4"}
_DTYPE = {"bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "half": "fp16", "fp16": "fp16"}
#: name tails that do not change the architecture: chat/instruct tunes, a checkpoint's date
#: (DeepSeek-V3-0324) and Llama 4's active-parameters-and-experts tag (Scout-17B-16E)
_TAIL = re.compile(r"(-Instruct|-Chat|-hf|-Base|-FP8|-v0\.1|-\d{4}|-\d+B-\d+E)$", re.IGNORECASE)
#: presets whose published checkpoint is FP8, so a serve command without --quantization runs FP8
#: weights (SGLang "DeepSeek V3/V3.1/R1 Usage": "The official DeepSeek V3 is already in FP8")
_NATIVE_PRECISION = {"DeepSeek-V3": "fp8"}
#: the word that starts the engine's own arguments (what precedes it: env, python -m, docker)
_LAUNCHERS = ("serve", "trtllm-serve", "sglang.launch_server", "vllm.entrypoints.openai.api_server")


def is_serve_command(text: str) -> bool:
    """True when the text launches vLLM or SGLang."""
    return any(word in text for word in ("vllm serve", "vllm.entrypoints.openai.api_server",
                                         "sglang.launch_server", "sglang serve", "trtllm-serve"))


def read_serve_command(text: str, path: str) -> JobFile:
    """The predict-serving flags of a vLLM / SGLang serve command."""
    engine = ("trtllm" if "trtllm-serve" in text else "sglang" if "sglang" in text
              else "vllm")  # fmt: skip
    job = JobFile(path, engine)
    launcher = {"trtllm": "trtllm-serve", "sglang": "sglang.launch_server"}.get(engine, "vllm")
    job.set(launcher, "engine", engine)  # the engine's own defaults (issue 38's --engine)
    try:
        words = shlex.split(text, comments=True)
    except ValueError as exc:
        raise job.fail("", f"not a shell command line ({exc})") from None
    entry = {"vllm": "serve", "trtllm": "trtllm-serve"}.get(engine, "")
    if entry in words:
        at = words.index(entry) + (words[words.index(entry) + 1:][:1] == ["serve"])
        if at < len(words) - 1 and not words[at + 1].startswith("-"):
            _model(job, f"{entry} MODEL", words[at + 1], path)
    dp, expert, dp_attention, served = 1, False, "--enable-dp-attention" in words, ""
    start = next((i for i, word in enumerate(words) if word in _LAUNCHERS), 0)
    for i, word in enumerate(words[start:], start):
        if not word.startswith("-"):
            continue
        flag, _, inline = word.partition("=")
        value = inline or (words[i + 1] if i + 1 < len(words) else "")
        if flag in _READ:
            dest, kind = _READ[flag]
            if kind is int:
                if not value.isdigit() or int(value) < 1:
                    raise job.fail(flag, f"{value!r} is not a positive integer")
                job.set(flag, dest, int(value))
            else:
                job.set(flag, dest, kind)
        elif flag in ("--extra_llm_api_options", "--config"):
            _options_file(job, flag, value, path)
        elif flag == "--enable-expert-parallel":
            expert = True
        elif flag in ("--moe-a2a-backend", "--all2all-backend"):  # SGLang / vLLM (issue 39)
            if value.startswith("deepep"):
                job.set(flag, "moe_a2a_backend", "deepep")
            else:
                job.ignore(flag, f"{value!r}: priced as the default all-to-all")
        elif flag == "--deepep-mode":
            job.ignore(flag, "priced as auto: low-latency kernels for decode-sized passes, "
                       "normal ones for larger")
        elif flag == "--enable-dp-attention":
            continue
        elif flag in ("--data-parallel-size", "-dp", "--dp-size", "--dp"):
            dp = int(value) if value.isdigit() else 1
            if not (dp_attention or expert or "--enable-expert-parallel" in words):
                job.ignore(flag, "data-parallel replicas are priced one at a time")
        elif flag in ("--model", "--model-path"):
            _model(job, flag, value, path)
        elif flag == "--served-model-name":
            served = value
        elif flag == "--kv-cache-dtype":
            if value.startswith("fp8"):
                job.set(flag, "kv_precision", "fp8")
            elif value not in ("auto", "bf16", "bfloat16"):
                job.ignore(flag, f"{value!r} is not priced (fp8 or the model dtype are)")
        elif flag in ("--quantization", "-q"):
            if value not in _QUANT:
                raise job.fail(flag, f"{value!r} is not a quantization this reader knows "
                               f"({', '.join(_QUANT)})")
            job.set(flag, "precision", _QUANT[value])
        elif flag == "--dtype":
            if value in _DTYPE and "precision" not in job.values:
                job.set(flag, "precision", _DTYPE[value])
            elif value not in _DTYPE:
                job.ignore(flag, f"{value!r}: the checkpoint's own dtype (bf16, or FP8 where "
                           "the model's published weights are FP8)")
        elif flag == "--enable-chunked-prefill":
            job.ignore(flag, "chunked prefill is on by default here too")
        else:
            job.ignore(flag, "server, logging or memory setting: not priced")
    if served and not {"model", "hf_config"} & job.values.keys():  # a local checkpoint folder
        _model(job, "--served-model-name", served, path)
    job.assume("tp", 1, f"the {engine} default tensor-parallel size (no TP flag in the command)")
    if job.context.get("named_precision"):
        job.assume("precision", job.context["named_precision"], "the checkpoint's name says FP8")
    if job.values.get("model") in _NATIVE_PRECISION:
        native = _NATIVE_PRECISION[job.values["model"]]
        job.assume("precision", native, f"{job.values['model']}'s published weights are {native}")
    if expert:
        job.set("--enable-expert-parallel", "ep", job.values.get("tp", 1) * dp)
    if dp_attention and dp > 1:  # SGLang: --tp counts every GPU, attention runs TP / DP wide
        tp = job.values.get("tp", 1)
        if tp % dp:
            raise job.fail("--dp", f"{dp} does not divide --tp {tp} (DP attention)")
        job.set("--tp / --dp (--enable-dp-attention)", "tp", tp // dp)
    return job


def _model(job: JobFile, key: str, name: str, path: str) -> None:
    """A preset from a Hugging Face id (org/Name-Instruct), else a local folder's config.json."""
    from costmodels.llm.presets import get_preset

    candidates = [name.rstrip("/").split("/")[-1].removeprefix("Meta-")]  # Meta-Llama-3.1
    while _TAIL.search(candidates[-1]):  # -17B-16E-Instruct -> -17B-16E -> Llama-4-Scout
        candidates.append(_TAIL.sub("", candidates[-1]))
    for candidate in candidates:
        try:
            job.set(key, "model", get_preset(candidate).name)
            if re.search(r"-FP8(-|$)", name, re.IGNORECASE):  # Llama-3.1-405B-Instruct-FP8
                job.context["named_precision"] = "fp8"
            return
        except ValueError:
            continue
    config = Path(name) / "config.json"
    if not config.is_absolute():
        config = Path(path).parent / config
    if config.is_file():
        job.set(key, "hf_config", str(config))
    else:
        job.ignore(key, f"{name} is not a model preset here and has no config.json; give "
                   "--model or --hf-config")


def _options_file(job: JobFile, flag: str, value: str, path: str) -> None:
    """trtllm-serve's LLM-API options YAML, beside the command file when relative."""
    from commatlas.job_files.trtllm import read_trtllm
    from costmodels.limits import read_text_bounded

    options = Path(value)
    if not options.is_absolute():
        options = Path(path).parent / options
    if not options.is_file():
        job.ignore(flag, f"{value} is not a file beside the command; its options are not read")
        return
    read_trtllm(read_text_bounded(options, flag), str(options), job)
