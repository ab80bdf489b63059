"""No silent overwrite of a cluster profile, and check-ddp says when a profile is another fabric's.

Issue 30, item 3: README's chain wrote ``my-cluster.yaml`` twice (calibrate, then
import-nccl-tests) and check-ddp priced a gloo CPU run with the A100 fit (-49 %). Now an
existing profile is refused, before any work, with what it holds, unless ``--force``; and
check-ddp warns when the profile was measured over another transport than its run.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from commatlas.cli import main
from commatlas.measure.check_ddp import check_arguments
from commatlas.measure.profile_output import calibrate_source, fabric_warning, profile_transport

LOG = Path(__file__).resolve().parents[1] / "costmodels" / "data" / "nccl_tests"
LOG = LOG / "superbench_8xa100_allreduce.txt"
TORCHRUN_ENV = {"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "x", "MASTER_PORT": "1"}


def _import(out: Path, *extra: str) -> int:
    return main(["import-nccl-tests", str(LOG), "--collective", "all-reduce", "--out", str(out),
                 *extra])  # fmt: skip


def test_import_refuses_an_existing_profile_and_says_what_it_holds(tmp_path, capsys) -> None:
    out = tmp_path / "my-cluster.yaml"
    assert _import(out) == 0
    before = out.read_bytes()
    capsys.readouterr()
    assert _import(out, "--name", "other") == 2
    err = capsys.readouterr().err
    assert "--out" in err and "already exists (profile 'my-cluster' from nccl-tests" in err
    assert "intra level(s)" in err and "pass --force to replace it" in err
    assert len(err.strip().splitlines()) == 1
    assert out.read_bytes() == before  # untouched
    assert _import(out, "--name", "other", "--force") == 0
    assert b"name: other" in out.read_bytes()


def test_a_file_that_is_not_a_profile_is_named_as_such(tmp_path, capsys) -> None:
    notes = tmp_path / "notes.yaml"
    notes.write_text("my notes\n")
    assert _import(notes) == 2
    assert "already exists (a file that is not a cluster profile (9 bytes))" in (
        capsys.readouterr().err
    )
    assert notes.read_text() == "my notes\n"


def test_calibrate_refuses_before_measuring(tmp_path, capsys, monkeypatch) -> None:
    """The check runs before the process group (none can be made with these variables)."""
    for key, value in TORCHRUN_ENV.items():
        monkeypatch.setenv(key, value)
    out = tmp_path / "p.yaml"
    assert _import(out) == 0
    capsys.readouterr()
    assert main(["calibrate", "--out", str(out)]) == 2
    assert "already exists (profile 'p' from nccl-tests" in capsys.readouterr().err


def test_check_ddp_refuses_an_existing_calibration_out(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("RANK", "0")
    out = tmp_path / "cal.yaml"
    out.write_text("x\n")
    args = argparse.Namespace(widths=["8", "4"], batch_size=4, iters=1, warmup=1,
                              bucket_cap_mb=25.0, methods=["allreduce"], profile=None,
                              calibration_out=str(out), force=False)  # fmt: skip
    with pytest.raises(ValueError, match="--calibration-out .* already exists"):
        check_arguments(args)
    check_arguments(argparse.Namespace(**{**vars(args), "force": True}))


@pytest.mark.parametrize(
    ("source", "backend", "warns"),
    [
        ("nccl-tests", "gloo", True),  # README's old chain: an A100 fit priced a gloo CPU run
        ("nccl-tests", "nccl", False),
        (calibrate_source("gloo", "cpu"), "gloo", False),
        (calibrate_source("gloo", "cpu"), "nccl", True),
        ("test", "gloo", False),  # the source does not say: nothing to compare
    ],
)
def test_check_ddp_warns_when_the_profile_is_another_fabrics(source, backend, warns) -> None:
    warning = fabric_warning(source, "lab", backend, "cpu")
    assert (warning is not None) == warns
    if warns:
        assert f"this run uses {backend} on cpu" in warning and "drop --profile" in warning
    assert profile_transport(calibrate_source("nccl", "cuda")) == "nccl"
