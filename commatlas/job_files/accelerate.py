"""An Accelerate config YAML with ``distributed_type: FSDP`` (what ``accelerate config`` writes,
examples/config_yaml_templates/fsdp.yaml) as predict-llm flags. The model and the batch are not
in it: they come from --model / --hf-config / a config.json beside it and --global-batch.

Meanings from Accelerate's FSDP guide (huggingface.co/docs/accelerate, "Fully Sharded Data
Parallel"): FULL_SHARD shards parameters, gradients and optimizer states (ZeRO 3),
SHARD_GRAD_OP gradients and optimizer states (ZeRO 2), NO_SHARD none (DDP), HYBRID_SHARD shards
within a node and replicates across nodes; FSDP2 (``fsdp_version: 2``) says
``fsdp_reshard_after_forward`` instead of a strategy; ``num_processes`` counts every GPU.
"""

from __future__ import annotations

from typing import Any

from commatlas.job_files.report import JobFile
from costmodels.yaml_bounded import safe_load_bounded

_STRATEGIES = {"FULL_SHARD": 3, "SHARD_GRAD_OP": 2, "NO_SHARD": 0, "HYBRID_SHARD": 3,
               "HYBRID_SHARD_ZERO2": 2, "1": 3, "2": 2, "3": 0, "4": 3}  # fmt: skip
_NOT_PRICED = ("compute_environment", "debug", "machine_rank", "main_training_function",
               "rdzv_backend", "same_network", "tpu_env", "tpu_use_cluster", "tpu_use_sudo",
               "use_cpu", "enable_cpu_affinity", "downcast_bf16", "main_process_ip",
               "main_process_port", "gpu_ids", "dynamo_config")  # fmt: skip
_FSDP_NOT_PRICED = {
    "fsdp_auto_wrap_policy": "wrapping per transformer block is what the model prices",
    "fsdp_transformer_layer_cls_to_wrap": "wrapping per transformer block is priced",
    "fsdp_state_dict_type": "checkpointing", "fsdp_sync_module_states": "start-up only",
    "fsdp_cpu_ram_efficient_loading": "start-up only", "fsdp_use_orig_params": "bookkeeping",
    "fsdp_forward_prefetch": "forward prefetch is not modelled apart from --prefetch",
    "fsdp_offload_params": "offload is not priced: memory and time as on the GPU",
    "fsdp_ignored_modules": "bookkeeping", "fsdp_min_num_params": "wrapping threshold",
}  # fmt: skip


def read_accelerate(text: str, path: str) -> JobFile:
    """The flags an Accelerate FSDP config describes; JobFileError naming the key otherwise."""
    job = JobFile(path, "accelerate", finish=_finish)
    data = safe_load_bounded(text, f"--from {path}")
    if not isinstance(data, dict):
        raise job.fail("", "is not a YAML mapping (an Accelerate config is one)")
    if data.get("distributed_type") != "FSDP":
        raise job.fail("distributed_type", f"{data.get('distributed_type')!r}: this reader "
                       "reads Accelerate FSDP configs (distributed_type: FSDP)")
    job.set("(FSDP alone has no TP or PP)", "tp", 1)
    job.set("(FSDP alone has no TP or PP)", "pp", 1)
    job.set("distributed_type: FSDP", "framework", "pytorch")
    for key, value in data.items():
        if key == "num_processes":
            job.context["processes"] = _count(job, key, value)
            job.set("num_processes", "dp", job.context["processes"])
            job.context.update(world=job.context["processes"], world_key=key)
        elif key == "num_machines":
            job.context["machines"] = _count(job, key, value)
        elif key == "mixed_precision":
            _precision(job, str(value))
        elif key == "fsdp_config":
            _fsdp(job, value or {})
        elif key in _NOT_PRICED or key == "distributed_type":
            if key != "distributed_type":
                job.ignore(key, "launcher setting: does not change the step")
        else:
            job.unknown(key)
    return job


def _count(job: JobFile, key: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise job.fail(key, f"{value!r} is not a positive integer")
    return value


def _precision(job: JobFile, value: str) -> None:
    if value in ("bf16", "fp16", "fp8"):
        job.set("mixed_precision", "precision", value)
    elif value == "no":
        job.ignore("mixed_precision", "'no' is fp32 training, not priced here")
        job.assume("precision", "bf16", "fp32 is not priced; bf16 mixed precision instead")
    else:
        raise job.fail("mixed_precision", f"{value!r} is not no, fp16, bf16 or fp8")


def _fsdp(job: JobFile, fsdp: Any) -> None:
    if not isinstance(fsdp, dict):
        raise job.fail("fsdp_config", "is not a mapping")
    version = fsdp.get("fsdp_version", 1)
    if version not in (1, 2):
        raise job.fail("fsdp_config.fsdp_version", f"{version!r} is not an FSDP version this "
                       "reader knows (1 or 2)")
    for key, value in fsdp.items():
        if key == "fsdp_version":
            continue
        if key == "fsdp_sharding_strategy" and version == 1:
            if str(value) not in _STRATEGIES:
                raise job.fail(f"fsdp_config.{key}", f"{value!r} is not an FSDP strategy")
            job.set(f"fsdp_config.{key}", "zero", _STRATEGIES[str(value)])
            job.context["hybrid"] = str(value) in ("HYBRID_SHARD", "4")
        elif key == "fsdp_reshard_after_forward":
            zero = 3 if value in (True, "FULL_SHARD", "HYBRID_SHARD") else 2
            job.set(f"fsdp_config.{key}", "zero", zero)
        elif key == "fsdp_activation_checkpointing":
            job.set(f"fsdp_config.{key}", "recompute", "full" if value else "none")
        elif key == "fsdp_backward_prefetch":
            job.set(f"fsdp_config.{key}", "prefetch", 0 if value in (None, "NO_PREFETCH") else 1)
        elif key in _FSDP_NOT_PRICED:
            job.ignore(f"fsdp_config.{key}", _FSDP_NOT_PRICED[key])
        else:
            job.unknown(f"fsdp_config.{key}")
    job.assume("zero", 3, "FSDP's default strategy is FULL_SHARD")


def _finish(job: JobFile, values: dict[str, Any]) -> None:
    """GPUs per node from num_processes / num_machines; HYBRID_SHARD shards within a node."""
    processes, machines = job.context.get("processes"), job.context.get("machines", 1)
    if processes is None:
        job.assume("dp", values.get("dp") or 1, "num_processes is not in the file (1 process)")
    elif processes % machines:
        raise job.fail("num_processes", f"{processes} GPUs do not split evenly over "
                       f"num_machines {machines}")
    elif machines > 1:
        job.set("num_processes / num_machines", "gpus_per_node", processes // machines)
    if job.context.get("hybrid"):
        job.set("fsdp_sharding_strategy: HYBRID_SHARD", "dp_shard",
                values.get("gpus_per_node") or (processes or 1) // machines)
