"""The documentation site builds with `mkdocs build --strict`, offline, with generated pages."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from commatlas.docs_pages import record_page, write_record_pages
from taxonomy import load_taxonomy

ROOT = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_every_record_has_a_page(site: Path) -> None:
    for record_id in load_taxonomy().records:
        assert (site / "records" / record_id / "index.html").is_file()


def test_record_page_shows_formula_symbols_citation_and_source(site: Path) -> None:
    html = (site / "records" / "ring-allreduce" / "index.html").read_text()
    assert "arithmatex" in html and "\\frac{\\beta n \\left(2 p - 2\\right)}{p}" in html
    assert "transfer time per byte" in html  # symbol table
    assert "10.1016/j.jpdc.2008.09.002" in html
    text = re.sub(r"<[^>]+>", "", html)  # code highlighting splits tokens into spans
    assert "def ring_allreduce(tensor" in text  # the implementation's source
    assert "reduce-scatter" in html


def test_site_is_offline(site: Path) -> None:
    """No CDN, no web fonts: every script and stylesheet is local, KaTeX included."""
    for page in site.rglob("*.html"):
        text = page.read_text()
        for url in re.findall(r'(?:src|href)="(https?://[^"]+)"', text):
            assert not url.endswith((".js", ".css")), f"{page}: external asset {url}"
        assert "fonts.googleapis" not in text and "fonts.gstatic" not in text
    assert (site / "assets" / "katex" / "katex.min.js").is_file()
    assert (site / "assets" / "katex" / "fonts" / "KaTeX_Main-Regular.woff2").is_file()


def test_generator_writes_whole_folder_and_is_idempotent(tmp_path: Path) -> None:
    out = tmp_path / "records"
    first = write_record_pages(out)
    assert {p.name for p in first} == {"index.md", *(f"{i}.md" for i in load_taxonomy().records)}
    stamp = {p: p.stat().st_mtime_ns for p in first}
    write_record_pages(out)  # nothing changed: nothing rewritten (keeps `mkdocs serve` calm)
    assert {p: p.stat().st_mtime_ns for p in first} == stamp
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".records-")]


def test_record_without_links_says_so() -> None:
    record = (
        load_taxonomy()
        .records["ring-allreduce"]
        .model_copy(update={"cost_model": None, "reference_impl": None})
    )
    text = record_page(record)
    assert "No cost model yet." in text and "No reference implementation yet." in text


def test_validation_page_is_computed_at_build(site: Path) -> None:
    html = (site / "generated" / "validation" / "index.html").read_text()
    text = re.sub(r"<[^>]+>", "", html)
    assert re.search(r"MAPE over the \d+ predicted rows: \d+\.\d%", text)
    assert text.count("ResNet-50") >= 28  # every ResNet-50 row of the measured table


def test_megatron_validation_page_is_computed_at_build(site: Path) -> None:
    html = (site / "generated" / "validation-llm" / "index.html").read_text()
    text = re.sub(r"<[^>]+>", "", html)
    assert re.search(r"Mean absolute error over 10 rows: \d+\.\d%", text)
