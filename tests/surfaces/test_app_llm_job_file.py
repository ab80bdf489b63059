"""The LLM planner's job-file upload (issue 41): the same readers as ``plan-llm --from`` fill
the page's inputs (model preset, sequence, batch, GPUs per node, nodes, precision, framework),
a bad file is one error line, and the page still renders with the uploader."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from app_helpers import app_test

from app_pages import llm_job_file
from app_pages.llm_job_file import planner_state

DATA = Path(__file__).resolve().parents[1] / "data" / "jobfiles"
PAGE = str(Path(__file__).parents[2] / "app_pages" / "llm_planner.py")


def read(name: str, gpus_total: int = 64):
    path = DATA / name
    return planner_state(path.read_text(encoding="utf-8"), path.name, gpus_total)


def test_torchtitan_file_fills_the_page_with_the_page_gpu_count() -> None:
    updates, report = read("torchtitan/llama3_405b.toml", gpus_total=128)
    # dp = 128 GPUs / TP 8 = 16 ranks x local_batch_size 2
    assert updates == {"seq": 8192, "gbatch": 32, "prec": "fp8", "fw": "pytorch-compile",
                       "fp8r": "tensorwise", "atp": 1, "model": "Llama 3.1 405B"}  # fmt: skip
    assert report["format"] == "torchtitan" and report["ignored"]


def test_megatron_command_gives_its_own_gpu_count_and_nodes() -> None:
    updates, _ = read("megatron/train_llama3_8b_h100_fp8.sh", gpus_total=999)
    assert updates["gbatch"] == 128 and updates["gpus"] == 8 and updates["nodes"] == 1
    assert updates["prec"] == "fp8" and updates["fw"] == "megatron" and "model" not in updates


def test_upload_callback_sets_inputs_or_one_error(monkeypatch) -> None:
    class Upload:
        def __init__(self, name: str, data: bytes) -> None:
            self.name, self.size, self._data = name, len(data), data

        def getvalue(self) -> bytes:
            return self._data

    text = (DATA / "accelerate/config_yaml_templates_fsdp.yaml").read_bytes()
    state = {"job_file": Upload("fsdp.yaml", text), "nodes": 1, "gpus": 8, "prec": "fp16"}
    monkeypatch.setattr(llm_job_file, "st", SimpleNamespace(session_state=state))
    llm_job_file._apply_upload()
    assert state["prec"] == "bf16" and state["job_file_report"]["format"] == "accelerate"
    state["job_file"] = Upload("bad.json", b'{"zero_optimization": {"stage": 7}}')
    llm_job_file._apply_upload()
    assert "zero_optimization.stage" in state["job_file_error"]
    assert "job_file_report" not in state
    state["job_file"] = Upload("serve.sh", b"vllm serve meta-llama/Llama-3.1-8B -tp 2")
    llm_job_file._apply_upload()
    assert "predict-serving --from" in state["job_file_error"]
    state["job_file"] = Upload("bin.toml", b"\xff\xfe")
    llm_job_file._apply_upload()
    assert "not a text file" in state["job_file_error"]


def test_page_renders_with_the_uploader() -> None:
    at = app_test(PAGE)
    assert not at.exception
    assert any("Start from your job's config" in e.label for e in at.expander)
