"""A Megatron-Bridge override YAML (examples/*/conf/*_override_example.yaml: the fields of its
ConfigContainer - model, train, ddp, dist, mixed_precision ... - merged over a Python recipe) as
predict-llm flags (issue 41). The recipe itself is Python and is not read: what an override
file leaves out (often the model and the degrees) comes from flags, and the report says so.

Field meanings from Megatron-Bridge's ConfigContainer (megatron.bridge.training.config) and
Megatron-Core's TransformerConfig / DistributedDataParallelConfig: the ``*_parallel_size``
degrees, ``use_distributed_optimizer`` (ZeRO 1), Megatron FSDP's
``data_parallel_sharding_strategy`` (optim / optim_grads / optim_grads_params = ZeRO 1/2/3),
``grad_reduce_in_fp32`` and the mixed-precision recipe names (bf16_mixed, fp16_mixed,
bf16_with_fp8_delayed_scaling_mixed, ...).
"""

from __future__ import annotations

from typing import Any

from commatlas.job_files.report import JobFile
from costmodels.yaml_bounded import safe_load_bounded

SECTIONS = ("model", "model_config", "train", "train_config", "ConfigContainer")
_MODEL = {"tensor_model_parallel_size": "tp", "pipeline_model_parallel_size": "pp",
          "virtual_pipeline_model_parallel_size": "interleave", "context_parallel_size": "cp",
          "expert_model_parallel_size": "ep", "seq_length": "seq_len", "num_layers": "layers",
          "hidden_size": "hidden", "num_attention_heads": "heads",
          "num_query_groups": "kv_heads", "ffn_hidden_size": "ffn",
          "num_moe_experts": "experts", "moe_router_topk": "top_k",
          # issue 39's layout vocabulary (Megatron-Core TransformerConfig field names)
          "expert_tensor_parallel_size": "etp",
          "num_layers_in_first_pipeline_stage": "first_stage_layers",
          "num_layers_in_last_pipeline_stage": "last_stage_layers",
          "mtp_num_layers": "mtp"}  # fmt: skip
_SHARDING = {"optim": 1, "optim_grads": 2, "optim_grads_params": 3, "no_shard": 0}
_NOT_PRICED = ("optimizer", "optimizer_config", "scheduler", "scheduler_config", "checkpoint",
               "checkpoint_config", "logger", "logger_config", "dataset", "dataset_config",
               "rng", "rng_config", "tokenizer", "profiling", "profiling_config",
               "rerun_state_machine", "comm_overlap", "ft", "straggler", "nvrx_straggler",
               "perf_matrix")  # fmt: skip


def is_bridge_override(data: Any) -> bool:
    """True when a YAML mapping has Megatron-Bridge ConfigContainer sections."""
    return isinstance(data, dict) and "distributed_type" not in data and any(
        key in data for key in SECTIONS)


def read_megatron_bridge(text: str, path: str) -> JobFile:
    """The predict-llm flags a Megatron-Bridge override file sets."""
    job = JobFile(path, "megatron-bridge", finish=_finish)
    data = safe_load_bounded(text, f"--from {path}")
    if not isinstance(data, dict):
        raise job.fail("", "is not a YAML mapping")
    if isinstance(data.get("ConfigContainer"), dict):
        for key in set(data) - {"ConfigContainer"}:
            job.ignore(key, "outside ConfigContainer: a launcher's settings")
        data = data["ConfigContainer"]
    job.set("(Megatron-Core)", "framework", "megatron")
    for section, value in data.items():
        table = value if isinstance(value, dict) else {}
        if section in ("model", "model_config"):
            _model(job, section, table)
        elif section in ("train", "train_config"):
            for key, item in table.items():
                dest = {"global_batch_size": "global_batch", "micro_batch_size": "micro_batch"}
                if key in dest:
                    job.set(f"{section}.{key}", dest[key], _count(job, f"{section}.{key}", item))
                else:
                    job.ignore(f"{section}.{key}", "does not change one step's time or memory")
        elif section in ("ddp", "ddp_config", "dist", "mixed_precision"):
            _data_parallel(job, section, value)
        elif section in _NOT_PRICED or section.endswith("_config"):
            job.ignore(section, "does not change one step's time or memory")
        else:
            job.unknown(section)
    job.assume("tied_embeddings", False, "Megatron-Bridge's Llama/Qwen recipes untie the head "
               "(give --tied-embeddings for a GPT recipe)")  # fmt: skip
    return job


def _count(job: JobFile, key: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise job.fail(key, f"{value!r} is not a positive integer")
    return value


def _model(job: JobFile, section: str, model: dict[str, Any]) -> None:
    for key, value in model.items():
        name = f"{section}.{key}"
        if key in _MODEL and value is not None:
            job.set(name, _MODEL[key], _count(job, name, value))
        elif key == "sequence_parallel":
            job.set(name, "sequence_parallel", bool(value))
        elif key == "recompute_granularity" and value in ("full", "selective"):
            job.set(name, "recompute", value)
        elif key == "fp8" and value:
            job.set(name, "precision", "fp8")
        elif key == "fp8_recipe" and value in ("delayed", "tensorwise", "blockwise"):
            job.set(name, "fp8_recipe", value)
        elif key == "enable_cuda_graph" and value:
            job.set(name, "cuda_graphs", True)
        else:
            job.ignore(name, "not a layout, shape or precision field priced here")


def _data_parallel(job: JobFile, section: str, value: Any) -> None:
    if section == "mixed_precision" and isinstance(value, str):
        precision = ("fp8" if "fp8" in value else "fp16" if value.startswith("fp16")
                     else "bf16")  # fmt: skip
        job.set(section, "precision", precision)
        if precision == "fp8" and "delayed" in value:
            job.set(section, "fp8_recipe", "delayed")
        return
    for key, item in (value or {}).items():
        name = f"{section}.{key}"
        if key == "use_distributed_optimizer" and item:
            job.set(name, "zero", 1)
        elif key == "data_parallel_sharding_strategy" and item in _SHARDING:
            job.set(name, "zero", _SHARDING[item])
        elif key == "use_megatron_fsdp" and item:
            job.set(name, "framework", "megatron-fsdp")
            job.assume("zero", 3, "Megatron FSDP shards parameters, gradients and optimizer "
                       "states unless data_parallel_sharding_strategy says less")
        elif key == "grad_reduce_in_fp32":
            job.set(name, "reduce_dtype", "fp32" if item else "bf16")
        elif key == "dtype" and item in ("bf16", "fp16"):
            job.set(name, "precision", item)
        else:
            job.ignore(name, "not priced")


def _finish(job: JobFile, values: dict[str, Any]) -> None:
    """The GPU count is not in an override file: dp comes from --dp."""
    if values.get("dp") is None:
        raise job.fail("", "a Megatron-Bridge override file does not say how many GPUs run it; "
                       "give --dp")
