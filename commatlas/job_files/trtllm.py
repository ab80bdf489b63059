"""A TensorRT-LLM LLM-API options YAML (what ``trtllm-serve --extra_llm_api_options FILE`` and
``trtllm-bench`` take; TensorRT-LLM's examples/configs/) as predict-serving flags (issue 41).

Meanings from TensorRT-LLM's LLM-API reference (LlmArgs, KvCacheConfig): ``tensor_parallel_size``
and ``moe_expert_parallel_size`` count GPUs; with ``enable_attention_dp`` attention runs one
request group per GPU (attention TP 1) while the experts spread over the EP ranks, which is this
project's ``ep/tp`` attention groups (costmodels/serving/layout.py); ``max_batch_size`` caps the
scheduled requests, ``max_num_tokens`` the tokens of one iteration; ``kv_cache_config.dtype`` is
the cache's element type. The weights' precision comes from the checkpoint, not this file.
"""

from __future__ import annotations

from typing import Any

from commatlas.job_files.report import JobFile
from costmodels.yaml_bounded import safe_load_bounded

TRTLLM_KEYS = ("tensor_parallel_size", "moe_expert_parallel_size", "pipeline_parallel_size",
               "enable_attention_dp", "kv_cache_config", "cuda_graph_config", "max_num_tokens")
_COUNTS = {"tensor_parallel_size": "tp", "pipeline_parallel_size": "pp",
           "moe_expert_parallel_size": "ep", "max_batch_size": "max_num_seqs",
           "max_num_tokens": "max_batched_tokens"}  # fmt: skip
_NOT_PRICED = {
    "trust_remote_code": "model loading", "print_iter_log": "logging",
    "stream_interval": "streaming granularity", "max_seq_len": "a cap; lengths come from the "
    "request flags", "cuda_graph_config": "CUDA graphs are on (the default) either way",
    "moe_config": "MoE kernel backend: not priced apart", "attention_dp_config": "attention-DP "
    "balancing: not priced", "speculative_config": "speculative decoding (MTP) is not priced",
    "backend": "runtime choice", "disable_overlap_scheduler": "scheduler overlap: not priced",
    "enable_chunked_prefill": "chunked prefill is on by default here too",
    "scheduler_config": "scheduler policy: --policy", "moe_cluster_parallel_size": "not priced",
}  # fmt: skip


def is_trtllm_options(data: Any) -> bool:
    """True when a YAML mapping holds TensorRT-LLM LLM-API keys (and no Accelerate keys)."""
    return isinstance(data, dict) and "distributed_type" not in data and any(
        key in data for key in TRTLLM_KEYS)


def read_trtllm(text: str, path: str, job: JobFile | None = None) -> JobFile:
    """The predict-serving flags of a TensorRT-LLM options YAML (into ``job`` when a
    trtllm-serve command names the file)."""
    if job is None:
        job = JobFile(path, "trtllm")
        job.set("(TensorRT-LLM options file)", "engine", "trtllm")  # issue 38's --engine trtllm
    data = safe_load_bounded(text, f"--from {path}")
    if not isinstance(data, dict):
        raise job.fail("", "is not a YAML mapping (TensorRT-LLM options are one)")
    for key, value in data.items():
        if key in _COUNTS:
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise job.fail(key, f"{value!r} is not a positive integer")
            job.set(key, _COUNTS[key], value)
        elif key == "kv_cache_config":
            _kv_cache(job, value)
        elif key == "enable_attention_dp":
            job.context["attention_dp"] = bool(value)
        elif key in _NOT_PRICED:
            job.ignore(key, _NOT_PRICED[key])
        else:
            job.unknown(key)
    if job.context.get("attention_dp"):  # attention TP 1, one request group per GPU
        gpus = job.values.get("tp", 1)
        job.set("enable_attention_dp + tensor_parallel_size", "tp", 1)
        job.set("enable_attention_dp + moe_expert_parallel_size", "ep",
                max(job.values.get("ep", 1), gpus))  # fmt: skip
    job.assume("precision", "bf16", "the weights' precision is the checkpoint's, not in this "
               "file: give --precision fp8 for an FP8 checkpoint")
    return job


def _kv_cache(job: JobFile, kv: Any) -> None:
    if not isinstance(kv, dict):
        raise job.fail("kv_cache_config", "is not a mapping")
    for key, value in kv.items():
        name = f"kv_cache_config.{key}"
        if key == "dtype":
            if str(value).startswith("fp8"):
                job.set(name, "kv_precision", "fp8")
            elif value not in ("auto", "bfloat16", "float16"):
                job.ignore(name, f"{value!r} is not priced (fp8 or the model dtype are)")
        elif key == "tokens_per_block":
            job.set(name, "block_size", int(value))
        elif key == "enable_block_reuse":
            if value:
                job.set(name, "prefix_caching", True)
        elif key in ("free_gpu_memory_fraction", "max_tokens", "host_cache_size"):
            job.ignore(name, "cache sizing: the cache takes the memory the weights leave")
        else:
            job.unknown(name)
