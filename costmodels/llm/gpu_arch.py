"""The GPU generation of a preset, for the constants and error bands that depend on it.

Hopper: H100 (SXM, PCIe, 96 GB), H200, H800, H20 and the GH200's GPU (all GH100 chips);
Ampere: A100; Blackwell: B200, GB200, B300, GB300 (Blackwell Ultra); CDNA 3: MI300X, MI325X;
CDNA 4: MI355X (gfx950, issue 39); Volta: V100. A generation without its own fitted constant
(an MFU ceiling, an error band) takes the generic one, as "other" does.
"""

from __future__ import annotations

_ARCH = {"A100": "ampere", "H100": "hopper", "H200": "hopper", "H800": "hopper", "H20": "hopper",
         "GH200": "hopper", "B200": "blackwell", "GB200": "blackwell", "MI300X": "cdna3",
         "B300": "blackwell", "GB300": "blackwell",
         "MI325X": "cdna3", "MI355X": "cdna4", "V100": "volta"}  # fmt: skip


def gpu_arch(name: str) -> str:
    """The generation of a GPU preset name ("other" for one not listed)."""
    for prefix, arch in _ARCH.items():
        if name.startswith(prefix):
            return arch
    return "other"
