"""The layout a step was measured on, written as text (``tp=8,pp=2,dp=4,mb=1``): the one parser
the command line (``--measured-layout``) and the app's calibration box share.

Keys: tp, pp, dp (required unless a base layout is given), mb (micro-batch), v (interleave),
zero, recompute (none|selective|full), sp (on|off), cp, ep. Keys left out take the base layout's
values (predict-llm: the predicted layout) or Layout's defaults. The result is checked by
``costmodels.llm.layout_check`` with names like "--measured-layout tp", so an error names the
flag and the key.

>>> from costmodels.llm.shapes import TransformerShape
>>> shape = TransformerShape(32, 4096, 32, 2048)
>>> measured_layout(shape, "tp=8, pp=2, dp=4, mb=2", global_batch=64).micro_batches
8
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from costmodels.llm.layout_check import CLI_NAMES, checked_layout
from costmodels.llm.shapes import Layout, TransformerShape
from costmodels.units import ascii_whole

# text key -> Layout field
KEYS = {"tp": "tp", "pp": "pp", "dp": "dp", "mb": "micro_batch", "v": "interleave",
        "zero": "zero", "recompute": "recompute", "sp": "sequence_parallel", "cp": "cp",
        "ep": "ep"}  # fmt: skip
MAX_TEXT = 200  # characters: ten keys with their values fit in a quarter of this


def names_for(label: str) -> dict[str, str]:
    """layout_check names where every layout field reads '<label> <key>'."""
    return {**CLI_NAMES, **{field: f"{label} {key}" for key, field in KEYS.items()}}


def parse_layout_text(text: str, label: str = "--measured-layout") -> dict[str, Any]:
    """{Layout field: value} from 'tp=8,pp=2,...'; ValueError naming ``label`` and the key."""
    if len(text) > MAX_TEXT:
        raise ValueError(f"{label}: longer than {MAX_TEXT} characters")
    out: dict[str, Any] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        key, sep, raw = (piece.strip() for piece in item.partition("="))
        if not sep or key not in KEYS:
            raise ValueError(f"{label}: {item[:30]!r} is not KEY=VALUE with KEY one of "
                             f"{' '.join(KEYS)}")  # fmt: skip
        if KEYS[key] in out:
            raise ValueError(f"{label}: {key} given twice")
        out[KEYS[key]] = _value(key, raw, label)
    if not out:
        raise ValueError(f"{label}: empty; write e.g. tp=8,pp=2,dp=4,mb=1")
    return out


def _value(key: str, raw: str, label: str) -> Any:
    if key == "recompute":
        if raw not in ("none", "selective", "full"):
            raise ValueError(f"{label}: recompute must be none, selective or full")
        return raw
    if key == "sp":
        if raw not in ("on", "off"):
            raise ValueError(f"{label}: sp must be on or off, got {raw[:20]!r}")
        return raw == "on"
    try:  # costmodels.units' one rule: ASCII digits only (no '1_5', no '١٦')
        value = ascii_whole(raw)
    except ValueError:
        raise ValueError(
            f"{label}: {key} must be a whole number in ASCII digits, got {raw[:20]!r}"
        ) from None
    if key == "zero" and value not in (0, 1, 2, 3):
        raise ValueError(f"{label}: zero must be 0, 1, 2 or 3, got {value}")
    return value


def measured_layout(
    shape: TransformerShape,
    text: str | None,
    *,
    global_batch: int,
    gpus_per_node: int | None = None,
    base: Layout | None = None,
    label: str = "--measured-layout",
    names: Mapping[str, str] | None = None,
) -> Layout:
    """The checked Layout ``text`` describes, on top of ``base`` (if any)."""
    given = parse_layout_text(text, label) if text is not None else {}
    if base is not None:
        values = {field: getattr(base, field) for field in KEYS.values()}
    else:
        missing = [key for key in ("tp", "pp", "dp") if key not in given]
        if missing:
            raise ValueError(f"{label}: give at least tp, pp and dp (missing {', '.join(missing)})")
        values = {}
    values.update(given)
    return checked_layout(shape, global_batch=global_batch, gpus_per_node=gpus_per_node,
                          names=names or names_for(label), **values)  # fmt: skip
