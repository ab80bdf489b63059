"""The one output primitive (costmodels.safe_output) and the one bounded reader
(costmodels.limits.read_text_bounded, costmodels.yaml_bounded), issue 24.

Writes: ``-`` is standard output; FIFOs and character devices are streams, never renamed over; a
directory, socket or block device is refused; a read-only file is refused with its mode kept;
an existing file keeps its mode; a symlink's target is replaced, not the link. Reads: a FIFO
nobody writes is an error after the deadline, never a hang; devices are read bounded; YAML
nests at most 1,000 deep and holds at most MAX_NODES values. Device nodes are made with
os.mknod, which needs root (skipped otherwise, with that reason).
"""

from __future__ import annotations

import os
import socket
import stat
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from costmodels import limits, safe_output
from costmodels.limits import read_text_bounded
from costmodels.safe_output import OutputError, check_output, write_output
from costmodels.units import ascii_decimal, ascii_whole
from costmodels.yaml_bounded import dump_yaml, safe_load_bounded
from reference_impls.torchrun_env import torchrun_env

pytestmark = pytest.mark.timeout(30)
ROOT_ONLY = pytest.mark.skipif(
    os.geteuid() != 0, reason="os.mknod makes device nodes only as root (CAP_MKNOD)"
)


def _reader(path: Path, out: list[bytes]) -> threading.Thread:
    def read() -> None:
        with open(path, "rb") as stream:
            out.append(stream.read())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def test_dash_and_dev_stdout_are_standard_output(capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("-", "/dev/stdout"):
        target = write_output(name, "hello\n", "--output")
        assert target.to_stdout and str(target) == "standard output"
    assert capsys.readouterr().out == "hello\nhello\n"


def test_dev_null_is_written_as_a_stream_and_dev_full_fails() -> None:
    assert write_output("/dev/null", "x" * 100_000).kind == "stream"
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)  # still the device, not a regular file
    with pytest.raises(OutputError, match="/dev/full.*No space left"):
        write_output("/dev/full", "x")


def test_a_fifo_is_written_through_and_stays_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    thread = _reader(fifo, got)
    write_output(fifo, "through the pipe\n")
    thread.join(10)
    assert got == [b"through the pipe\n"] and stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_fifo_nobody_reads_is_an_error_not_a_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    monkeypatch.setattr(safe_output, "STREAM_WAIT_S", 0.2)
    with pytest.raises(OutputError, match="nobody reads the FIFO"):
        write_output(fifo, "x")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


@ROOT_ONLY
def test_device_nodes_stream_or_are_refused(tmp_path: Path) -> None:
    null = tmp_path / "null"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers
    assert write_output(null, "x").kind == "stream" and stat.S_ISCHR(os.stat(null).st_mode)
    disk = tmp_path / "disk"
    os.mknod(disk, 0o600 | stat.S_IFBLK, os.makedev(7, 250))  # never opened: judged by its type
    with pytest.raises(OutputError, match="is a block device"):
        check_output(disk, "--out")
    assert stat.S_ISBLK(os.stat(disk).st_mode)


def test_sockets_and_directories_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        with pytest.raises(OutputError, match="is a socket"):
            write_output(path, "x", "--out")
        with pytest.raises(ValueError, match="not a readable file"):
            read_text_bounded(path, "--data")
    finally:
        server.close()
    with pytest.raises(OutputError, match="is a directory"):
        check_output(tmp_path, "--out")
    with pytest.raises(OutputError, match="names a directory"):
        check_output(f"{tmp_path}/new/", "--out")


def test_read_only_files_are_refused_and_modes_are_kept(tmp_path: Path) -> None:
    locked = tmp_path / "locked.yaml"
    locked.write_text("old")
    locked.chmod(0o444)
    with pytest.raises(OutputError, match=r"read-only \(-r--r--r--\)"):
        write_output(locked, "new", "--out")
    assert locked.read_text() == "old" and stat.S_IMODE(locked.stat().st_mode) == 0o444
    private = tmp_path / "private.yaml"
    private.write_text("old")
    private.chmod(0o600)
    write_output(private, "new")
    assert private.read_text() == "new" and stat.S_IMODE(private.stat().st_mode) == 0o600


def test_a_symlink_keeps_pointing_at_its_replaced_target(tmp_path: Path) -> None:
    real, link = tmp_path / "real.txt", tmp_path / "link.txt"
    real.write_text("old")
    link.symlink_to(real)
    write_output(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    to_null = tmp_path / "null"
    to_null.symlink_to("/dev/null")
    assert write_output(to_null, "x").kind == "stream" and to_null.is_symlink()


def test_overwrite_false_refuses_an_existing_file(tmp_path: Path) -> None:
    """The policy issue 30's --force builds on: check_output(..., overwrite=False)."""
    profile = tmp_path / "profile.yaml"
    target = check_output(profile, "--out", overwrite=False, exists_hint="add --force")
    write_output(target, "first")
    with pytest.raises(OutputError, match="already exists; add --force"):
        write_output(target, "second")
    assert profile.read_text() == "first"
    assert write_output("/dev/null", "x", overwrite=False).kind == "stream"


def test_a_fifo_input_is_read_until_closed_or_refused_at_the_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = tmp_path / "times"
    os.mkfifo(fifo)

    def write(text: str) -> threading.Thread:
        def run() -> None:
            with open(fifo, "w") as stream:
                stream.write(text)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread

    writer = write("250 ms\n")
    assert read_text_bounded(fifo, "--times") == "250 ms\n"
    writer.join(10)
    monkeypatch.setattr(limits, "STREAM_WAIT_S", 0.2)
    with pytest.raises(ValueError, match="--times: .* gave no end of input within 0.2 s"):
        read_text_bounded(fifo, "--times")  # nobody writes


def test_devices_are_read_bounded(tmp_path: Path) -> None:
    zero = tmp_path / "zero"
    zero.symlink_to("/dev/zero")
    with pytest.raises(ValueError, match="is a device that does not end"):
        read_text_bounded(zero, "--profile", limit=4096)
    assert read_text_bounded("/dev/null", "--data") == ""
    with pytest.raises(ValueError, match="larger than 10 bytes"):
        (tmp_path / "big").write_text("x" * 11)
        read_text_bounded(tmp_path / "big", "--data", limit=10)


def test_yaml_is_bounded_in_depth_and_size() -> None:
    with pytest.raises(ValueError, match="nested more than 1,000 levels"):
        safe_load_bounded("[" * 50_000, "p.yaml")
    with pytest.raises(ValueError, match="nested more than 1,000 levels"):
        safe_load_bounded("".join(" " * i + "a:\n" for i in range(2000)) + " " * 2000 + "1", "p")
    with pytest.raises(ValueError, match="more than 100 YAML values"):
        safe_load_bounded("[" + "1," * 300 + "1]", "p.yaml", max_nodes=100)
    assert safe_load_bounded("a: [1, 2]", "p.yaml") == {"a": [1, 2]}


_WORDS = st.sampled_from(["all-reduce", "intra", "x.y_z", "yes", "null", "1e5"])
_SCALARS = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
            | st.floats(allow_nan=False) | _WORDS)  # fmt: skip


@given(st.lists(st.dictionaries(st.sampled_from(["bytes", "seconds", "level", "n"]), _SCALARS),
                max_size=5))  # fmt: skip
def test_flat_records_round_trip_through_the_fast_writer(records: list[dict]) -> None:
    """dump_yaml writes measurements one per line itself; PyYAML must read back the same."""
    data = {"name": "lab", "measurements": records}
    assert safe_load_bounded(dump_yaml(data, ("measurements",)), "p") == data


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({"RANK": "5", "WORLD_SIZE": "1"}, "RANK=5 is not below WORLD_SIZE=1"),
        ({"RANK": "0", "WORLD_SIZE": "0"}, "WORLD_SIZE=0 must be at least 1"),
        ({"RANK": "-1", "WORLD_SIZE": "2"}, "RANK='-1' is not a whole number"),
        ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_PORT": "99999"}, "MASTER_PORT=99999"),
        ({"RANK": "0", "WORLD_SIZE": "١"}, "WORLD_SIZE='١' is not a whole number"),
        ({"RANK": "0", "WORLD_SIZE": "4", "LOCAL_RANK": "4", "LOCAL_WORLD_SIZE": "4"},
         "LOCAL_RANK=4"),
    ],
)  # fmt: skip
def test_torchrun_env_refuses_what_no_launcher_writes(env: dict, words: str) -> None:
    full = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500", **env}
    with pytest.raises(ValueError, match=words):
        torchrun_env(full)
    with pytest.raises(ValueError, match="MASTER_ADDR, MASTER_PORT not set"):
        torchrun_env({"RANK": "0", "WORLD_SIZE": "1"})
    good = {"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"}
    assert torchrun_env(good).rank == 1


@pytest.mark.parametrize("text", ["١٦", "８", "1_000", "0x10", "١.٥", "1e1000000", "", "  "])
def test_numbers_are_ascii_digits_only(text: str) -> None:
    with pytest.raises(ValueError, match="ASCII digits"):
        ascii_decimal(text)
    with pytest.raises(ValueError, match="ASCII digits"):
        ascii_whole(text)
    assert ascii_whole(" 16 ") == 16 and ascii_decimal("2.5e-3") == 0.0025
