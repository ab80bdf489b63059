"""A torchrun entry point whose peer never comes (issue 35): it says what it waits for, gives up
after ``--timeout`` with one line and a non-zero exit, instead of waiting silently for the
default 30 minutes. Both entry points run at once (one wait for the two)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_missing_peer_is_one_line_and_a_failure(tmp_path: Path) -> None:
    runs = {}
    calibrate_out = ["--out", str(tmp_path / "p.yaml")]
    # rank 0 hosts the store and waits for rank 1; a rank 1 finds nothing at rank 0's port
    for module, rank, extra in (("commatlas.check_ddp", 0, []),
                                ("commatlas.calibrate", 0, calibrate_out),
                                ("commatlas.check_ddp", 1, [])):  # fmt: skip
        port = _free_port()
        env = {**os.environ, "WORLD_SIZE": "2", "RANK": str(rank), "LOCAL_RANK": str(rank),
               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
               "OMP_NUM_THREADS": "1"}  # fmt: skip
        env.pop("LOCAL_WORLD_SIZE", None)
        cmd = [sys.executable, "-m", module, "--timeout", "3", *extra]
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)  # fmt: skip
        runs[module, rank] = (proc, port)
    try:
        results = {m: (*p.communicate(timeout=120), p.returncode, port)
                   for m, (p, port) in runs.items()}  # fmt: skip
    finally:  # a run that did not end (the bug this test is about) must not outlive the test
        for proc, _ in runs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for (module, rank), (out, err, code, port) in results.items():
        prog = "commatlas calibrate" if module.endswith("calibrate") else "commatlas check-ddp"
        lines = err.strip().splitlines()
        assert code == 1 and not out, (module, err)
        assert lines[0] == (
            f"{prog}: rank {rank} waiting for 2 ranks at 127.0.0.1:{port} (timeout 3 s)"
        ), lines
        gave_up = f"{prog}: the 2 ranks did not meet at 127.0.0.1:{port} within 3 s"
        assert len(lines) == 2 and lines[1].startswith(gave_up), lines
        assert "Traceback" not in err and (rank == 0 or "nothing listens there" in lines[1])
    assert not (tmp_path / "p.yaml").exists()
