"""A DeepSpeed config JSON (``ds_config.json``) as predict-llm flags. The model is not in it: it
comes from --model, --hf-config or a config.json beside the file.

Meanings from DeepSpeed's configuration reference (deepspeed.readthedocs.io, "DeepSpeed
Configuration JSON"): ``train_batch_size`` = ``train_micro_batch_size_per_gpu`` x
``gradient_accumulation_steps`` x data-parallel ranks; "auto" is filled in by the Hugging Face
Trainer at run time; ``zero_optimization.stage`` 0-3 shards optimizer states, gradients and
parameters; ``offload_*`` moves them to CPU or NVMe. DeepSpeed alone has no tensor or pipeline
parallelism, so every GPU is a data-parallel rank. The file is priced as ``--framework
deepspeed`` (issue 36), whose ``zero_optimization`` bucket sizes, stage-3 prefetch and
persistence knobs and ``overlap_comm`` / ``contiguous_gradients`` are read into the ``--ds-*``
flags (costmodels/llm/deepspeed_config.py).
"""

from __future__ import annotations

import json
from typing import Any

from commatlas.job_files.report import JobFile

_NOT_PRICED = {
    "optimizer": "optimizer hyperparameters", "scheduler": "learning-rate schedule",
    "steps_per_print": "logging", "wall_clock_breakdown": "logging", "tensorboard": "logging",
    "wandb": "logging", "csv_monitor": "logging", "gradient_clipping": "a cheap elementwise step",
    "prescale_gradients": "a scale, not a volume", "zero_allow_untested_optimizer": "a check",
    "torch_autocast": "autocast switch (precision read from bf16 / fp16)",
    "flops_profiler": "profiler", "comms_logger": "logging", "cuda_visible_devices": "launcher",
    "dump_state": "logging", "memory_breakdown": "logging", "seed": "randomness",
    "amp": "apex AMP: priced as fp16", "communication_data_type": "the reduce dtype is fp32 "
    "or bf16 here; read it with --reduce-dtype", "checkpoint": "checkpointing between steps",
    "data_efficiency": "data sampling", "compression_training": "model compression",
}  # fmt: skip
# zero_optimization key -> the --ds-* flag's dest (element counts; switches below)
_ZERO_SIZES = {
    "reduce_bucket_size": "ds_reduce_bucket_size",
    "allgather_bucket_size": "ds_allgather_bucket_size",
    "stage3_prefetch_bucket_size": "ds_prefetch_bucket_size",
    "stage3_param_persistence_threshold": "ds_param_persistence_threshold",
    "stage3_max_live_parameters": "ds_max_live_parameters",
    "stage3_max_reuse_distance": "ds_max_reuse_distance",
}
_ZERO_NOT_PRICED = {
    "reduce_scatter": "priced as reduce-scatter", "allgather_partitions": "priced as all-gather",
    "round_robin_gradients": "not priced",
    "stage3_gather_16bit_weights_on_model_save": "checkpointing",
    "sub_group_size": "optimizer step grouping, not modelled",
    "offload_optimizer": "offload is not priced: memory and time as on the GPU",
    "offload_param": "offload is not priced: memory and time as on the GPU",
    "zenflow": "ZenFlow's selective updates are not priced", "elastic_checkpoint": "checkpointing",
}  # fmt: skip


def read_deepspeed(text: str, path: str) -> JobFile:
    """The flags a DeepSpeed config describes; JobFileError naming the key when it cannot."""
    job = JobFile(path, "deepspeed", finish=_finish)
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise job.fail("", f"not valid JSON ({exc})".replace("\n", " ")) from None
    if not isinstance(data, dict):
        raise job.fail("", "is not a JSON object (a DeepSpeed config is one)")
    job.set("(DeepSpeed has no TP or PP)", "tp", 1)
    job.set("(DeepSpeed has no TP or PP)", "pp", 1)
    job.set("(DeepSpeed ZeRO around PyTorch kernels)", "framework", "deepspeed")
    for key, value in data.items():
        if key in ("train_batch_size", "train_micro_batch_size_per_gpu",
                   "gradient_accumulation_steps"):  # fmt: skip
            if value == "auto":
                job.ignore(key, "auto: the Hugging Face Trainer fills it at run time")
            elif not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise job.fail(key, f"{value!r} is not a positive integer")
            else:
                job.context[key] = value
        elif key in ("bf16", "fp16"):
            if _enabled(job, key, value):
                job.set(f"{key}.enabled", "precision", key)
        elif key == "zero_optimization":
            _zero(job, value)
        elif key in _NOT_PRICED:
            job.ignore(key, _NOT_PRICED[key])
        else:
            job.unknown(key)
    if data.get("bf16", {}).get("enabled") is True and data.get("fp16", {}).get("enabled") is True:
        raise job.fail("bf16.enabled", "and fp16.enabled are both true")
    job.assume("precision", "bf16", "neither bf16 nor fp16 is enabled (fp32 training is not "
               "priced here)")
    if "train_micro_batch_size_per_gpu" in job.context:
        job.set("train_micro_batch_size_per_gpu", "micro_batch",
                job.context["train_micro_batch_size_per_gpu"])  # fmt: skip
    if "train_batch_size" in job.context:
        job.set("train_batch_size", "global_batch", job.context["train_batch_size"])
    return job


def _enabled(job: JobFile, key: str, value: Any) -> bool:
    if not isinstance(value, dict):
        raise job.fail(key, "is not an object with 'enabled'")
    enabled = value.get("enabled", False)
    if enabled == "auto":
        job.ignore(f"{key}.enabled", "auto: the Hugging Face Trainer decides at run time")
        return False
    if not isinstance(enabled, bool):
        raise job.fail(f"{key}.enabled", f"{str(enabled)[:40]!r} is not true, false or "
                       "\"auto\"")  # fmt: skip
    for extra in set(value) - {"enabled"}:
        job.ignore(f"{key}.{extra}", "a mixed-precision detail not priced")
    return enabled is True


def _zero(job: JobFile, zero: Any) -> None:
    if not isinstance(zero, dict):
        raise job.fail("zero_optimization", "is not an object")
    stage = zero.get("stage", 0)
    if isinstance(stage, bool) or not isinstance(stage, int) or stage not in (0, 1, 2, 3):
        raise job.fail("zero_optimization.stage", f"{stage!r} is not a ZeRO stage this reader "
                       "knows (0, 1, 2, 3)")
    job.set("zero_optimization.stage", "zero", stage)
    for key in zero:
        if key == "stage":
            continue
        name, value = f"zero_optimization.{key}", zero[key]
        if key in _ZERO_SIZES and value == "auto":
            job.ignore(name, "auto: the Hugging Face Trainer fills it from the model at run "
                       "time; DeepSpeed's default priced")  # fmt: skip
        elif key in _ZERO_SIZES and _unused_at(key, stage):  # a copied config's other stage
            _elements(job, name, value)
            job.ignore(name, f"a knob of another ZeRO stage than this file's stage {stage}")
        elif key in _ZERO_SIZES:
            job.set(name, _ZERO_SIZES[key], _elements(job, name, value))
        elif key in ("overlap_comm", "contiguous_gradients"):
            if not isinstance(value, bool):
                raise job.fail(name, f"{value!r} is not true or false")
            if key == "overlap_comm":
                job.set(name, "ds_overlap_comm", "on" if value else "off")
            elif not value:
                job.set(name, "ds_contiguous_gradients", False)
        elif key in _ZERO_NOT_PRICED:
            job.ignore(f"zero_optimization.{key}", _ZERO_NOT_PRICED[key])
        else:
            job.unknown(f"zero_optimization.{key}")


def _unused_at(key: str, stage: int) -> bool:
    """Whether ``stage`` runs without this zero_optimization size (stage3_*: ZeRO-3 only;
    allgather_bucket_size: ZeRO-1/2's weight all-gather after the step)."""
    if key.startswith("stage3_"):
        return stage != 3
    return key == "allgather_bucket_size" and stage not in (1, 2)


_AT_LEAST_ONE = ("reduce_bucket_size", "allgather_bucket_size")


def _elements(job: JobFile, key: str, value: Any) -> int:
    """A whole element count (DeepSpeed configs write 5e8 as a float)."""
    from costmodels.llm.deepspeed_config import MAX_ELEMENTS

    low = 1 if key.endswith(_AT_LEAST_ONE) else 0  # DeepSpeedZeroConfig: buckets hold >= 1
    whole = isinstance(value, (int, float)) and not isinstance(value, bool) and (
        low <= value <= MAX_ELEMENTS and float(value).is_integer())  # nan fails the range
    if not whole:
        shown = f"a {len(str(value)):,}-digit number" if isinstance(value, int) and len(
            str(value)) > 20 else repr(value)  # fmt: skip
        raise job.fail(key, f"{shown} is not a whole number of elements from {low} to "
                       f"{MAX_ELEMENTS:.0e}")  # fmt: skip
    return int(value)


def _finish(job: JobFile, values: dict[str, Any]) -> None:
    """Every GPU is a data-parallel rank: train_batch_size = micro x accumulation x dp."""
    total = job.context.get("train_batch_size")
    micro = values.get("micro_batch") or job.context.get("train_micro_batch_size_per_gpu")
    accum = job.context.get("gradient_accumulation_steps")
    dp = values.get("dp")
    if dp is None and total and micro and accum:
        if total % (micro * accum):
            raise job.fail("train_batch_size", f"{total} is not a multiple of "
                           f"train_micro_batch_size_per_gpu {micro} x gradient_accumulation_steps "
                           f"{accum}")
        job.set("train_batch_size / (micro x accumulation)", "dp", total // (micro * accum))
        return
    if dp is None:
        raise job.fail("", "a DeepSpeed config does not say how many GPUs run it; give --dp")
    if total and micro and accum and total != micro * accum * dp:
        raise job.fail("train_batch_size", f"{total} is not train_micro_batch_size_per_gpu "
                       f"{micro} x gradient_accumulation_steps {accum} x data-parallel {dp}")
    if total is None and micro:
        job.assume("global_batch", micro * (accum or 1) * dp, "train_micro_batch_size_per_gpu "
                   "x gradient_accumulation_steps x data-parallel ranks")
    if micro is None and total:
        job.assume("micro_batch", total // (dp * (accum or 1)) or 1, "train_batch_size / "
                   "(gradient_accumulation_steps x data-parallel ranks)")
