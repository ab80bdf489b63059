"""Which reader reads a ``--from`` file: by its suffix (.toml torchtitan, .json DeepSpeed,
.yaml/.yml Accelerate, anything else a Megatron-LM command line or launch script, or a vLLM / SGLang
serve command when it launches one; a YAML with TensorRT-LLM's LLM-API keys or Megatron-Bridge's
ConfigContainer sections is read as those), each file
read through costmodels.limits.read_text_bounded (size, FIFOs, binary files refused)."""

from __future__ import annotations

from pathlib import Path

from commatlas.job_files.report import JobFile
from costmodels.limits import read_text_bounded

FORMATS = ("torchtitan", "deepspeed", "accelerate", "megatron", "megatron-bridge", "vllm",
           "sglang", "trtllm")
SERVING_FORMATS = ("vllm", "sglang", "trtllm")


def format_of(path: str) -> str:
    """The format a file's suffix names."""
    suffix = Path(path).suffix.lower()
    return {".toml": "torchtitan", ".json": "deepspeed", ".yaml": "accelerate",
            ".yml": "accelerate"}.get(suffix, "megatron")  # fmt: skip


def read_job_text(text: str, path: str, fmt: str | None = None) -> JobFile:
    """The JobFile of ``text`` read as ``fmt`` (default: by the suffix of ``path``)."""
    fmt = fmt or format_of(path)
    if fmt == "accelerate":  # a YAML: Accelerate's, or TensorRT-LLM's LLM-API options
        from commatlas.job_files.trtllm import is_trtllm_options, read_trtllm
        from costmodels.yaml_bounded import safe_load_bounded

        data = safe_load_bounded(text, f"--from {path}")
        if is_trtllm_options(data):
            return read_trtllm(text, path)
        from commatlas.job_files.megatron_bridge import is_bridge_override, read_megatron_bridge

        if is_bridge_override(data):
            return read_megatron_bridge(text, path)
    if fmt == "megatron":
        from commatlas.job_files.serve_command import is_serve_command, read_serve_command

        if is_serve_command(text):
            return read_serve_command(text, path)
    if fmt == "torchtitan":
        from commatlas.job_files.torchtitan import read_torchtitan as reader
    elif fmt == "deepspeed":
        from commatlas.job_files.deepspeed import read_deepspeed as reader
    elif fmt == "accelerate":
        from commatlas.job_files.accelerate import read_accelerate as reader
    else:
        from commatlas.job_files.megatron import read_megatron as reader
    return reader(text, path)


def read_job_file(path: str) -> JobFile:
    """The JobFile of the file at ``path``; a config.json beside it gives the model when the
    file names none."""
    job = read_job_text(read_text_bounded(path, "--from"), path)
    beside = Path(path).parent / "config.json"
    if not ({"model", "hf_config", "layers"} & set(job.values)) and beside.is_file():
        if beside.resolve() != Path(path).resolve():
            job.set("config.json beside the file", "hf_config", str(beside))
    return job
