"""The LLM planner's upload of the user's own job file (issue 41): a torchtitan TOML, a DeepSpeed
JSON, an Accelerate FSDP YAML or a Megatron-LM command line, read by the same readers as
``commatlas plan-llm --from`` (commatlas.job_files), fills the page's model, sequence, batch,
GPUs per node, nodes, precision, framework, fp8 recipe and async TP; what was read, assumed and
ignored is listed under the uploader. The layout itself is what the page searches."""

from __future__ import annotations

from typing import Any

import streamlit as st

from app_pages.llm_models import MODEL_CHOICES
from costmodels.limits import MAX_UPLOAD_BYTES

#: JobFile dest -> the planner's session key (costmodels values, page spellings)
_KEYS = {"seq_len": "seq", "global_batch": "gbatch", "precision": "prec", "framework": "fw",
         "fp8_recipe": "fp8r", "gpus_per_node": "gpus"}  # fmt: skip


def planner_state(text: str, name: str, gpus_total: int) -> tuple[dict[str, Any], dict]:
    """The session values a job file sets on the planner page, and its report; ValueError (one
    line naming the file and key) when it cannot be read. ``gpus_total`` is the page's GPU
    count, used where the file leaves the data-parallel degree open."""
    from commatlas.job_files.readers import SERVING_FORMATS, read_job_text
    from commatlas.job_files.report import JobFileError
    from costmodels.llm.presets import get_preset

    job = read_job_text(text, name)
    if job.format in SERVING_FORMATS:
        raise job.fail("", f"is a {job.format} serving file; this page plans training "
                       "(commatlas predict-serving --from reads it)")
    if job.finish is not None:
        try:  # the file's own GPU count first (a Megatron command's torchrun flags) ...
            job.finish(job, dict(job.values))
        except JobFileError as exc:  # ... else the page's nodes x GPUs per node
            if "give --dp" not in exc.why:
                raise
            model_parallel = 1
            for dest in ("tp", "pp", "cp"):
                model_parallel *= job.values.get(dest) or 1
            job.finish(job, {**job.values, "dp": max(gpus_total // model_parallel, 1)})
    values, updates = job.values, {}
    for dest, key in _KEYS.items():
        if values.get(dest) is not None:
            updates[key] = values[dest]
    if values.get("async_tp"):
        updates["atp"] = 1
    if values.get("model"):
        preset = get_preset(values["model"]).name
        if preset in MODEL_CHOICES:
            updates["model"] = preset
    elif values.get("hf_config") or values.get("layers"):
        job.ignore("model", "the page takes presets or a size; use commatlas plan-llm --from "
                   "for a config.json or shape flags")  # fmt: skip
    degrees = [values.get(d) for d in ("tp", "pp", "dp", "cp")]
    per_node = updates.get("gpus")
    if all(isinstance(d, int) for d in degrees) and per_node:
        total = degrees[0] * degrees[1] * degrees[2] * degrees[3]
        if total % per_node == 0:
            updates["nodes"] = total // per_node
    return updates, job.as_json([])


def _apply_upload() -> None:
    """on_change of the uploader: read the file, set the page's inputs, keep the report."""
    state = st.session_state
    upload = state.get("job_file")
    state.pop("job_file_report", None)
    state.pop("job_file_error", None)
    if upload is None:
        return
    try:
        if upload.size > MAX_UPLOAD_BYTES:
            raise ValueError(f"{upload.name}: {upload.size:,} bytes; at most "
                             f"{MAX_UPLOAD_BYTES:,} are read")  # fmt: skip
        try:
            text = upload.getvalue().decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{upload.name}: not a text file (UTF-8 expected)") from None
        total = int(state.get("nodes", 1)) * int(state.get("gpus", 8))
        updates, report = planner_state(text, upload.name, total)
    except ValueError as exc:
        state["job_file_error"] = str(exc)
        return
    state.update(updates)
    state["job_file_report"] = report


def job_file_upload() -> None:
    """The uploader and what the last upload read (drawn above the results)."""
    with st.expander("Start from your job's config (torchtitan, Megatron-LM, DeepSpeed, "
                     "Accelerate)"):  # fmt: skip
        st.file_uploader("A torchtitan .toml, DeepSpeed .json, Accelerate FSDP .yaml or a "
                         "Megatron-LM command line (.sh / .txt)",
                         type=["toml", "json", "yaml", "yml", "sh", "txt"], key="job_file",
                         on_change=_apply_upload)  # fmt: skip
        state = st.session_state
        if state.get("job_file_error"):
            st.error(state["job_file_error"])
        report = state.get("job_file_report")
        if report:
            from commatlas.job_files.report import report_lines

            st.code("\n".join(line.removeprefix("# ") for line in report_lines(report)))
