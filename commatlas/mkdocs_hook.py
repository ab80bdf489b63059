"""MkDocs hook: generate the per-record pages before every build (see docs_pages)."""

from __future__ import annotations

from pathlib import Path

from commatlas.docs_pages import write_generated_pages


def on_pre_build(config) -> None:
    write_generated_pages(Path(config["docs_dir"]))
