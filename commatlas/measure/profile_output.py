"""Where a command writes a cluster profile: never over an existing one unless asked.

Issue 30, item 3: README's chain had ``calibrate --out my-cluster.yaml`` and then
``import-nccl-tests ... --out my-cluster.yaml`` silently replace the first fit with an A100 one.
``import-nccl-tests``, ``calibrate`` and ``check-ddp --calibration-out`` now check their output
before the measurement or the fit: an existing regular file is refused unless ``--force`` is
given, and the message says what the file holds (a profile's name, source, date and levels, or
that it is not a profile). Everything else about the destination (``-``, ``/dev/null``, FIFOs,
read-only files, directories) is costmodels.safe_output's one rule (issue 24).
"""

from __future__ import annotations

from pathlib import Path

from costmodels.safe_output import OutputTarget, check_output

SOURCE_PREFIX = "commatlas calibrate"  # its source reads "commatlas calibrate (gloo, cpu)"


def what_is_there(path: Path) -> str:
    """One phrase describing the file at ``path`` (a profile or not)."""
    from costmodels.calibration.profile import ProfileError, load_profile

    try:
        profile = load_profile(path)
    except ProfileError:
        return f"a file that is not a cluster profile ({path.stat().st_size:,} bytes)"
    levels = " and ".join(profile.levels) or "no"
    return (f"profile {profile.name!r} from {profile.source}, created "
            f"{profile.created:%Y-%m-%d %H:%M} UTC, {levels} level(s)")  # fmt: skip


def check_profile_output(path: str, flag: str, force: bool) -> OutputTarget:
    """Where the profile goes (costmodels.safe_output.check_output), or ValueError when it
    cannot be written or holds a regular file and not ``force`` (before any work, so nothing is
    measured for nothing); the target refuses a file that appears during the work, too."""
    hint = "pass --force to replace it, or write to another file"
    target = check_output(path, flag)
    if target.kind == "file" and target.path.is_file() and not force:
        raise ValueError(f"{flag} {path} already exists ({what_is_there(target.path)}); {hint}")
    return check_output(path, flag, overwrite=force, exists_hint=hint)


def calibrate_source(backend: str, device: str) -> str:
    """The ``source`` calibrate writes: what carried the measured bytes."""
    return f"{SOURCE_PREFIX} ({backend}, {device})"


def profile_transport(source: str) -> str | None:
    """The backend a profile was measured with: "nccl" for nccl-tests, the backend calibrate
    wrote, or None when the source does not say (older profiles, hand-written ones)."""
    if source == "nccl-tests":
        return "nccl"
    if source.startswith(SOURCE_PREFIX + " ("):
        return source[len(SOURCE_PREFIX) + 2 :].split(",")[0].strip()
    return None


def fabric_warning(source: str, name: str, backend: str, device: str) -> str | None:
    """A warning when the profile was measured over another transport than this run's."""
    measured = profile_transport(source)
    if measured is None or measured == backend:
        return None
    return (
        f"warning: profile {name!r} was measured with {measured} ({source}) but this run uses "
        f"{backend} on {device}: the prediction prices the profile's links, not this run's, so "
        "expect large errors (calibrate on this run instead: drop --profile, or use a profile "
        f"from `commatlas calibrate --backend {backend}` on these ranks)"
    )
