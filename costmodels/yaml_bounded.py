"""YAML in and out with bounded work: a document of at most ``max_nodes`` values, nesting that
libyaml refuses past 1,000 levels (never a RecursionError), and lists of flat records written
one flow mapping per line (fast, and short to read).

PyYAML builds every value in Python (about 10-20 us each): a 1 MB document of one-character
values takes some 10 s, so the bytes alone do not bound the work. :func:`safe_load_bounded`
counts the parser's events first (libyaml, in C) and stops at ``max_nodes`` before any value is
built. Writing, PyYAML's representer costs as much per value; :func:`dump_yaml` writes the
records of ``flat_lists`` (e.g. a profile's measurements) itself.

Example::

    >>> print(dump_yaml({"name": "lab", "rows": [{"n": 8, "t": 1e-05, "op": "all-reduce"}]},
    ...                 flat_lists=("rows",)), end="")
    name: lab
    rows:
    - {n: 8, t: 1.0e-05, op: all-reduce}
    >>> safe_load_bounded("[" * 5000, "p.yaml")
    Traceback (most recent call last):
    ...
    ValueError: p.yaml: not valid YAML (nested more than 1,000 levels deep)
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_PLAIN = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")  # strings that need no quotes in flow style
_WORDS = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "nan", "inf"}
MAX_NODES = 200_000  # parser events (values) of one document: 4,096 measurements make ~66,000


def safe_load_bounded(text: str, origin: str, max_nodes: int = MAX_NODES) -> Any:
    """``yaml.safe_load(text)`` with at most ``max_nodes`` values; ValueError naming ``origin``
    when the text is not YAML, nests too deeply or holds too many values."""
    try:
        events = 0
        for _ in yaml.parse(text, Loader=_LOADER):
            events += 1
            if events > max_nodes:  # a scalar is one event, a collection two
                raise ValueError(f"{origin}: more than {max_nodes:,} YAML values")
        return yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        if "maximum nesting depth" in str(exc):
            raise ValueError(
                f"{origin}: not valid YAML (nested more than 1,000 levels deep)"
            ) from None
        raise ValueError(f"{origin}: not valid YAML ({exc})".replace("\n", " ")) from None
    except RecursionError:  # the pure-Python parser, where libyaml is missing
        raise ValueError(f"{origin}: not valid YAML (nested too deeply)") from None


def _scalar(value: Any) -> str | None:
    """``value`` as a YAML flow scalar, or None when only the representer may write it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return ".nan" if math.isnan(value) else ".inf" if value > 0 else "-.inf"
        text = repr(value)
        return text.replace("e", ".0e", 1) if "e" in text and "." not in text else text
    if isinstance(value, str) and _PLAIN.match(value) and value.lower() not in _WORDS:
        return value
    return None


def _flow_line(record: Any) -> str | None:
    if not isinstance(record, dict):
        return None
    parts = []
    for key, value in record.items():
        text = _scalar(value)
        if not isinstance(key, str) or not _PLAIN.match(key) or text is None:
            return None
        parts.append(f"{key}: {text}")
    return "- {" + ", ".join(parts) + "}"


def dump_yaml(data: dict[str, Any], flat_lists: tuple[str, ...] = ()) -> str:
    """Block-style YAML of ``data`` (key order kept, the ``flat_lists`` last); each list under
    ``flat_lists`` is written one record per line when every record is a flat mapping of plain
    scalars (else by PyYAML)."""
    head = {key: value for key, value in data.items() if key not in flat_lists}
    text = yaml.dump(head, Dumper=_DUMPER, sort_keys=False) if head else ""
    for key in flat_lists:
        if key not in data:
            continue
        records = data[key]
        lines = [_flow_line(record) for record in records] if isinstance(records, list) else [None]
        if not records:
            text += f"{key}: []\n"
        elif None in lines:
            text += yaml.dump({key: records}, Dumper=_DUMPER, sort_keys=False)
        else:
            text += f"{key}:\n" + "\n".join(lines) + "\n"  # type: ignore[arg-type]
    return text
