"""A torchtitan training TOML (``torchtitan/models/*/train_configs/*.toml`` of the TOML era,
the [job]/[model]/[training]/[parallelism] layout of 2025-2026) as predict-llm flags.

Source of the meanings: torchtitan's ``torchtitan/config/job_config.py`` (the dataclasses the
TOML fills) and docs/float8.md: ``data_parallel_shard_degree = -1`` takes the GPUs the other
degrees leave; FSDP shards when that degree is above 1; the PP microbatch defaults to 1 sequence;
TP always runs sequence parallel on the norms; ``selective_ac_option`` "op" is the per-op policy
and an integer k checkpoints every k-th block; float8 is on when ``model.converters`` holds
"float8".
"""

from __future__ import annotations

import tomllib
from typing import Any

from commatlas.job_files.report import JobFile

#: sections that do not change one step's time or memory (what they hold, shown as the reason)
_NOT_PRICED = {
    "job": "run bookkeeping", "profiling": "profiler settings", "metrics": "logging",
    "optimizer": "optimizer hyperparameters (AdamW's states are priced either way)",
    "lr_scheduler": "learning-rate schedule", "checkpoint": "checkpointing between steps",
    "validation": "evaluation between steps", "comm": "collective timeouts and tracing",
    "fault_tolerance": "fault tolerance between steps", "memory_estimation": "a tool's setting",
    "experimental": "experimental extensions", "debug": "debug settings",
}  # fmt: skip
_TRAINING_IGNORED = ("steps", "max_norm", "dataset", "dataset_path", "seed", "deterministic",
                     "gc_freq", "gc_debug", "warmup_steps", "tokenizer_path",
                     "mixed_precision_param")  # fmt: skip
_INTERLEAVED = ("Interleaved1F1B", "InterleavedZeroBubble", "ZBVZeroBubble", "DualPipeV",
                "LoopedBFS")  # fmt: skip
_PRESET_NAMES = {"llama3": "llama3-{}", "llama2": "Llama 2 {}", "qwen2.5": "qwen2.5-{}"}


def read_torchtitan(text: str, path: str) -> JobFile:
    """The flags a torchtitan TOML describes; JobFileError naming the key when it cannot."""
    job = JobFile(path, "torchtitan", finish=_finish)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise job.fail("", f"not valid TOML ({exc})") from None
    if "parallelism" not in data and any(
        key.endswith("_degree") for key in data.get("training", {})
    ):
        raise job.fail("[training]", "degrees under [training] are torchtitan's layout before "
                       "the [parallelism] section (2024); this reader knows the newer one")
    if "float8" in data:
        raise job.fail("[float8]", "the [float8] section is torchtitan's layout before "
                       "[quantize.linear.float8]; this reader knows the newer one")
    for section, value in data.items():
        if section in _NOT_PRICED:
            job.ignore(f"[{section}]", _NOT_PRICED[section])
        elif section not in ("model", "training", "parallelism", "activation_checkpoint",
                             "compile", "quantize"):  # fmt: skip
            job.unknown(f"[{section}]")
        elif not isinstance(value, dict):
            raise job.fail(section, "is not a table")
    _model(job, data.get("model", {}))
    _parallelism(job, data.get("parallelism", {}))
    _training(job, data.get("training", {}))
    _checkpointing(job, data.get("activation_checkpoint", {}))
    _compile_and_float8(job, data)
    return job


def _model(job: JobFile, model: dict[str, Any]) -> None:
    from costmodels.llm.presets import get_preset

    name, flavor = model.get("name"), model.get("flavor")
    pattern = _PRESET_NAMES.get(str(name))
    preset = pattern.format(flavor) if pattern and flavor else None
    try:
        if preset is None:
            raise ValueError
        get_preset(preset)
        job.set("model.name + model.flavor", "model", preset)
    except ValueError:
        job.ignore("model.name + model.flavor", f"{name} {flavor} is not a model preset here; "
                   "give --model or --hf-config")
    for key in model:
        if key not in ("name", "flavor", "converters"):
            job.ignore(f"model.{key}", "file paths and tokenizer: not a shape")


def _degree(job: JobFile, table: dict[str, Any], key: str, default: int = 1) -> int:
    value = table.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or (value < 1 and value != -1):
        raise job.fail(f"parallelism.{key}", f"{value!r} is not a degree (a positive integer)")
    return value


def _parallelism(job: JobFile, par: dict[str, Any]) -> None:
    tp, pp, cp = (_degree(job, par, f"{k}_parallel_degree") for k in ("tensor", "pipeline",
                                                                       "context"))  # fmt: skip
    job.set("parallelism.tensor_parallel_degree", "tp", tp)
    job.set("parallelism.pipeline_parallel_degree", "pp", pp)
    job.set("parallelism.context_parallel_degree", "cp", cp)
    replicate = _degree(job, par, "data_parallel_replicate_degree")
    shard = _degree(job, par, "data_parallel_shard_degree", -1)
    if replicate == -1:
        raise job.fail("parallelism.data_parallel_replicate_degree", "-1 is allowed only for "
                       "data_parallel_shard_degree")
    job.context.update(replicate=replicate, shard=shard)
    if shard != -1:
        job.set("parallelism.data_parallel_replicate_degree x data_parallel_shard_degree",
                "dp", replicate * shard)  # fmt: skip
    ep = _degree(job, par, "expert_parallel_degree")
    job.set("parallelism.expert_parallel_degree", "ep", ep)
    job.assume("sequence_parallel", tp > 1, "torchtitan's TP runs sequence parallel on norms")
    if par.get("enable_async_tensor_parallel"):
        job.set("parallelism.enable_async_tensor_parallel", "async_tp", True)
    reshard = par.get("fsdp_reshard_after_forward", "default")
    if reshard in ("never", "always"):
        job.set("parallelism.fsdp_reshard_after_forward", "reshard_after_forward",
                reshard == "always")  # fmt: skip
    elif reshard != "default":
        raise job.fail("parallelism.fsdp_reshard_after_forward",
                       f"{reshard!r} is not default, never or always")
    elif pp > 1:
        job.assume("reshard_after_forward", False, "torchtitan's default keeps weights "
                   "gathered with PP")
    schedule = par.get("pipeline_parallel_schedule", "1F1B")
    if pp > 1:
        interleave = 2 if schedule in _INTERLEAVED else 1
        job.set("parallelism.pipeline_parallel_schedule", "interleave", interleave)
        job.context["pp_microbatch"] = par.get("pipeline_parallel_microbatch_size", 1)
        if "pipeline_parallel_layers_per_stage" in par:
            job.context["layers_per_stage"] = par["pipeline_parallel_layers_per_stage"]
        if schedule == "GPipe":
            job.ignore("parallelism.pipeline_parallel_schedule", "GPipe priced as 1F1B")
    reduce = par.get("mixed_precision_reduce")
    if reduce in ("float32", "bfloat16"):
        job.set("parallelism.mixed_precision_reduce", "reduce_dtype",
                "fp32" if reduce == "float32" else "bf16")  # fmt: skip
    known = {"tensor_parallel_degree", "pipeline_parallel_degree", "context_parallel_degree",
             "data_parallel_replicate_degree", "data_parallel_shard_degree",
             "expert_parallel_degree", "enable_async_tensor_parallel",
             "fsdp_reshard_after_forward", "pipeline_parallel_schedule",
             "mixed_precision_reduce", "pipeline_parallel_microbatch_size",
             "pipeline_parallel_layers_per_stage"}  # fmt: skip
    for key in par:
        if key == "expert_tensor_parallel_degree" and par[key] not in (1, None):
            job.ignore(f"parallelism.{key}", "expert tensor parallelism is not priced (ETP 1)")
        elif key not in known and key != "expert_tensor_parallel_degree":
            job.ignore(f"parallelism.{key}", "does not change the priced layout")


def _training(job: JobFile, training: dict[str, Any]) -> None:
    local = training.get("local_batch_size", training.get("batch_size"))
    if local is not None:
        job.context["local_batch"] = local
    total = training.get("global_batch_size", -1)
    if isinstance(total, int) and total > 0:
        job.set("training.global_batch_size", "global_batch", total)
    if "seq_len" in training:
        job.set("training.seq_len", "seq_len", training["seq_len"])
    if job.values.get("pp", 1) > 1:
        micro = job.context.get("pp_microbatch", 1)
        job.set("parallelism.pipeline_parallel_microbatch_size", "micro_batch", micro)
    elif local is not None:
        job.set("training.local_batch_size", "micro_batch", local)
    for key in training:
        if key in _TRAINING_IGNORED:
            job.ignore(f"training.{key}", "does not change one step's time or memory")
        elif key == "enable_cpu_offload" and training[key]:
            job.ignore("training.enable_cpu_offload", "CPU offload is not priced")
        elif key not in ("local_batch_size", "batch_size", "global_batch_size", "seq_len",
                         "enable_cpu_offload", "mixed_precision_reduce"):  # fmt: skip
            job.unknown(f"training.{key}")


def _checkpointing(job: JobFile, ac: dict[str, Any]) -> None:
    mode = ac.get("mode", "none")
    option = str(ac.get("selective_ac_option", "2"))
    if mode in ("none", "full"):
        job.set("activation_checkpoint.mode", "recompute", mode)
    elif mode == "selective" and option == "op":
        job.set("activation_checkpoint.mode + selective_ac_option", "recompute", "op")
    elif mode == "selective" and option.isdigit() and int(option) >= 1:
        job.set("activation_checkpoint.mode + selective_ac_option", "recompute", "full")
        job.set("activation_checkpoint.selective_ac_option", "recompute_every", int(option))
    else:
        raise job.fail("activation_checkpoint.mode", f"{mode!r} / selective_ac_option "
                       f"{option!r} is not none, full, selective op or selective k")
    if mode != "selective" and "selective_ac_option" in ac:
        job.ignore("activation_checkpoint.selective_ac_option", f"not used with mode {mode}")


def _compile_and_float8(job: JobFile, data: dict[str, Any]) -> None:
    compiled = data.get("compile", {})
    model_compiled = bool(compiled.get("enable")) and "model" in compiled.get(
        "components", ["model"])
    job.set("compile.enable + compile.components", "framework",
            "pytorch-compile" if model_compiled else "pytorch")  # fmt: skip
    converters = data.get("model", {}).get("converters", [])
    fp8 = data.get("quantize", {}).get("linear", {}).get("float8", {})
    if "float8" in converters:
        job.set("model.converters", "precision", "fp8")
        recipe = fp8.get("recipe_name") or "tensorwise"
        if recipe.startswith("rowwise"):
            recipe = "rowwise"
        job.set("quantize.linear.float8.recipe_name", "fp8_recipe", recipe)
        job.set("quantize.linear.float8.enable_fsdp_float8_all_gather", "fp8_all_gather",
                bool(fp8.get("enable_fsdp_float8_all_gather", False)))  # fmt: skip
    else:
        job.set("model.converters", "precision", "bf16")
        if fp8:
            job.ignore("[quantize.linear.float8]", "float8 is not in model.converters")


def _finish(job: JobFile, values: dict[str, Any]) -> None:
    """dp (from --dp where the shard degree is -1), the global batch (local batch x dp) and
    FSDP: ZeRO 3 when the shard degree is above 1, HSDP with a replicate degree too."""
    replicate, dp = job.context["replicate"], values.get("dp")
    if dp is None:
        raise job.fail("parallelism.data_parallel_shard_degree", "-1 takes the GPUs the other "
                       "degrees leave, which the file does not say; give --dp")
    if dp % replicate:
        raise job.fail("parallelism.data_parallel_replicate_degree",
                       f"{replicate} does not divide the data-parallel degree {dp}")
    shard = dp // replicate
    keep = job.values.get("reshard_after_forward") is False
    job.assume("zero", (2 if keep else 3) if shard > 1 else 0, "torchtitan shards with FSDP "
               "when data_parallel_shard_degree > 1 (ZeRO 3; ZeRO 2 when weights stay gathered "
               "after forward), else replicates (DDP)")
    if replicate > 1 and shard > 1:
        job.assume("dp_shard", shard, "HSDP: shard within data_parallel_shard_degree ranks")
    _stages_per_rank(job, values)
    local = job.context.get("local_batch")
    if local is not None:
        job.assume("global_batch", local * dp, "training.local_batch_size x data-parallel "
                   "degree (training.global_batch_size unset: no gradient accumulation)")


def _stages_per_rank(job: JobFile, values: dict[str, Any]) -> None:
    """Virtual stages per GPU from ``pipeline_parallel_layers_per_stage``: the model's layers
    over PP x layers per stage (torchtitan builds that many stages, round-robin over ranks)."""
    per_stage, pp = job.context.get("layers_per_stage"), values.get("pp") or 1
    if per_stage is None or pp == 1:
        return
    layers = values.get("layers")
    if layers is None and values.get("model"):
        from costmodels.llm.presets import get_preset

        layers = get_preset(values["model"]).shape.layers
    key = "parallelism.pipeline_parallel_layers_per_stage"
    if not isinstance(per_stage, int) or per_stage < 1 or not layers or layers % (pp * per_stage):
        raise job.fail(key, f"{per_stage!r} x PP {pp} does not split {layers} layers evenly")
    job.set(key, "interleave", layers // (pp * per_stage))
