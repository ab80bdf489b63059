"""Every command in README.md's code blocks runs (issue 17, item 1: one crashed for months).

The README is parsed here, not copied: a command added there is run here. Each command runs in a
fresh folder holding what the README assumes a user has (an nccl-tests log, a Hugging Face
``config.json``, the ``my-cluster.yaml`` an earlier command writes), with these substitutions
to keep the suite fast, and nothing else changed:

* ``.venv/bin/commatlas ARGS`` runs in this process (``commatlas.cli.main``), which is what the
  entry point calls;
* ``torchrun ... --nproc-per-node=4`` runs with 2 ranks and small sizes (calibrate: 4 KiB to
  1 MiB, 3 repeats; check-ddp: a 32-32-8 MLP, 3 rounds), in a subprocess with a timeout;
* ``commatlas docs build`` is the session fixture ``site`` (tests/surfaces/conftest.py runs
  the same command), so the site is built once per session;
* ``bash scripts/gpu_check.sh`` needs a GPU: without CUDA only its ``--help`` runs;
* the two set-up commands (``bash scripts/app.sh``, ``bash scripts/test.sh``) install and start
  things; they are checked to be the "Two commands" section's two commands, not run.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from commatlas.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
LOG = ROOT / "tests" / "costmodels" / "data" / "nccl_tests" / "superbench_8xa100_allreduce.txt"
# Mixtral-8x7B-v0.1 keys as in mlc-ai/mlc-llm python/mlc_llm/model/model_preset.py @79d603f0
# (the README's plan-llm --hf-config example uses an MoE search, --ep 1,8)
CONFIG = (
    '{"architectures": ["MixtralForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,'
    ' "max_position_embeddings": 32768, "model_type": "mixtral", "num_attention_heads": 32,'
    ' "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8,'
    ' "num_local_experts": 8, "tie_word_embeddings": false, "vocab_size": 32000}'
)
SMALL = {  # torchrun module -> flags that keep it short (README's own flags are kept)
    "commatlas.calibrate": ["--sizes", "4KB", "1MB", "--repeats", "3", "--warmup", "1"],
    "commatlas.check_ddp": ["--widths", "32", "32", "8", "--iters", "3", "--warmup", "1"],
}
SETUP = ["bash scripts/app.sh", "bash scripts/test.sh"]


def bash_blocks(text: str) -> list[tuple[str, str]]:
    """(section heading, block text) of every ```bash block."""
    blocks, heading = [], ""
    for part in re.split(r"(^```bash\n.*?^```$)", text, flags=re.MULTILINE | re.DOTALL):
        if part.startswith("```bash"):
            blocks.append((heading, part.split("\n", 1)[1].rsplit("```", 1)[0]))
        else:
            headings = re.findall(r"^#+ (.+)$", part, re.MULTILINE)
            heading = headings[-1] if headings else heading
    return blocks


def commands(block: str) -> list[list[str]]:
    """The block's commands as argument lists: continuation lines joined, comments dropped."""
    joined = block.replace("\\\n", " ")
    return [args for line in joined.splitlines() if (args := shlex.split(line, comments=True))]


ALL = [(heading, args) for heading, block in bash_blocks(README) for args in commands(block)]
RUN = [args for heading, args in ALL if heading != "Two commands"]


def test_the_two_setup_commands_are_the_two_commands_section() -> None:
    section = [" ".join(args) for heading, args in ALL if heading == "Two commands"]
    assert section == SETUP
    for command in SETUP:
        assert (ROOT / command.split()[1]).is_file(), command
    assert RUN, "no other command found: the README's layout changed"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the README's commands read: an nccl-tests log, config.json, my-cluster.yaml."""
    folder = tmp_path_factory.mktemp("readme-inputs")
    shutil.copy(LOG, folder / "all_reduce_perf.log")
    (folder / "config.json").write_text(CONFIG)
    argv = ["import-nccl-tests", str(LOG), "--collective", "all-reduce",
            "--out", str(folder / "my-cluster.yaml")]  # fmt: skip
    assert main(argv) == 0
    return folder


def outputs(args: list[str]) -> list[str]:
    """The files a command writes (``--out`` / ``-o`` / ``--calibration-out``)."""
    flags = ("--out", "-o", "--calibration-out")
    return [args[i + 1] for i, arg in enumerate(args[:-1]) if arg in flags]


def test_no_readme_command_overwrites_another_ones_file() -> None:
    """Issue 30, item 3: calibrate and import-nccl-tests both wrote my-cluster.yaml."""
    written = [name for args in RUN for name in outputs(args)]
    assert written and len(written) == len(set(written)), written


def _label(args: list[str]) -> str:
    words = [a for a in args if not a.startswith("-")][:3]
    return " ".join(Path(w).name if "/" in w else w for w in words)


@pytest.mark.parametrize("args", RUN, ids=[f"{i}-{_label(a)}" for i, a in enumerate(RUN)])
def test_readme_command_runs(args: list[str], inputs: Path, tmp_path: Path, monkeypatch,
                             capsys, request) -> None:  # fmt: skip
    written = set(outputs(args))  # what this command writes is not there yet on a first run
    for item in inputs.iterdir():
        if item.name not in written:
            shutil.copy(item, tmp_path / item.name)
    monkeypatch.chdir(tmp_path)
    program, rest = args[0], args[1:]
    if program == ".venv/bin/commatlas" and rest[:2] == ["docs", "build"]:
        from conftest import DOCS_BUILD

        assert rest == DOCS_BUILD  # the fixture runs this very command
        assert (request.getfixturevalue("site") / "index.html").is_file()
        return
    if program == ".venv/bin/commatlas":
        build_parser(rest[0]).parse_args(rest)  # a typo in a flag fails here, readably
        code = main(rest)
        captured = capsys.readouterr()
        assert code == 0, captured.err
        assert captured.out.strip() or captured.err.strip()
        return
    if program == ".venv/bin/torchrun":
        module = rest[rest.index("-m") + 1]
        rest = [("--nproc-per-node=2" if a.startswith("--nproc-per-node") else a) for a in rest]
        _run([str(Path(sys.executable).parent / "torchrun"), *rest, *SMALL[module]], tmp_path)
        return
    if program == ".venv/bin/python":
        _run([sys.executable, *rest], ROOT)
        return
    if program == "bash" and rest[0] == "scripts/gpu_check.sh":
        import torch

        extra = rest[1:] if torch.cuda.is_available() else ["--help"]
        _run(["bash", rest[0], *extra], ROOT, timeout=600)
        return
    pytest.fail(f"no rule to run {' '.join(args)!r}: add one to this test")


def _run(argv: list[str], cwd: Path, timeout: int = 240) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=env)  # fmt: skip
    assert done.returncode == 0, (argv, done.stdout[-3000:], done.stderr[-3000:])
