"""The documentation site builds with `commatlas docs build` (strict), offline, with generated
pages.

The build itself is the session fixture ``site`` (tests/surfaces/conftest.py); these tests read
its HTML. What the generators compute is tested without a build in test_docs_pages.py,
test_docs_comparisons.py and test_docs_guides.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from commatlas.docs_site.api_reference import PACKAGES, api_page_of, public_modules
from taxonomy import load_taxonomy

ROOT = Path(__file__).parents[2]


def _text(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)  # code highlighting splits tokens into spans


def _nav_files(entries: list) -> list[str]:
    found = []
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        found += _nav_files(value) if isinstance(value, list) else [value]
    return found


def test_build_output_stays_short(site: Path) -> None:
    """Issue 17, item 12: no INFO line per record page outside the navigation (~220 of them);
    the record pages are declared not_in_nav in mkdocs.yml."""
    log = (site.parent / f"{site.name}.build.log").read_text()
    assert 'not included in the "nav"' not in log, log[:2000]
    assert len(log.splitlines()) < 60, log[:2000]


def test_every_record_has_a_page(site: Path) -> None:
    for record_id in load_taxonomy().records:
        assert (site / "records" / record_id / "index.html").is_file()


def test_every_nav_entry_is_built(site: Path) -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    files = _nav_files(config["nav"])
    assert len(files) >= 19  # home, 3 taxonomy, 4 compare, 5 guides, calculator, 2+3 more
    for name in files:
        stem = name.removesuffix(".md")
        page = site / (f"{stem}.html" if stem.endswith("index") else f"{stem}/index.html")
        assert page.is_file(), name


def test_record_page_shows_formula_plot_usage_citation_and_source(site: Path) -> None:
    html = (site / "records" / "ring-allreduce" / "index.html").read_text()
    assert "arithmatex" in html and "\\frac{\\beta n \\left(2 p - 2\\right)}{p}" in html
    assert "transfer time per byte" in html  # symbol table
    assert "10.1016/j.jpdc.2008.09.002" in html
    text = _text(html)
    assert "def ring_allreduce(tensor" in text  # the implementation's source
    assert "ring_allreduce(grad)" in text  # the usage example from the module docstring
    assert "reduce-scatter" in html
    plot = re.search(r'<img[^>]+src="([^"]*plots/ring-allreduce\.svg)"', html)
    assert plot, "the cost plot is not on the page"
    svg = (site / "records" / "ring-allreduce" / plot.group(1)).resolve()
    assert svg.is_file() and svg.read_text().startswith("<svg")


def test_every_modelled_record_has_its_plot(site: Path) -> None:
    for record in load_taxonomy().records.values():
        svg = site / "records" / "plots" / f"{record.id}.svg"
        assert svg.is_file() == bool(record.cost_model), record.id


def test_site_is_offline(site: Path) -> None:
    """No CDN, no web fonts: every script, stylesheet and image is local, KaTeX included."""
    for page in site.rglob("*.html"):
        text = page.read_text()
        for url in re.findall(r'(?:src|href)="(https?://[^"]+)"', text):
            assert not url.endswith((".js", ".css", ".svg", ".png")), f"{page}: external {url}"
        assert "fonts.googleapis" not in text and "fonts.gstatic" not in text
    assert (site / "assets" / "katex" / "katex.min.js").is_file()
    assert (site / "assets" / "katex" / "fonts" / "KaTeX_Main-Regular.woff2").is_file()


def test_home_page_shows_the_taxonomy_picture(site: Path) -> None:
    html = (site / "index.html").read_text()
    assert re.search(r'<img[^>]+src="generated/plots/taxonomy\.svg"', html)
    assert (site / "generated" / "plots" / "taxonomy.svg").is_file()


def test_api_reference_renders_every_public_module(site: Path) -> None:
    for package in PACKAGES:
        for module in public_modules(package):
            page = api_page_of(module).removesuffix(".md")
            html = (site / page / "index.html").read_text()
            assert f'id="{module}"' in html, f"{module} missing from the API reference"
    html = (site / "generated" / "api" / "costmodels" / "index.html").read_text()
    assert 'id="costmodels.model.CostModel.evaluate"' in html  # a method, from its docstring
    assert "Time in seconds; values are SI numbers" in html
    sizes = [page.stat().st_size for page in (site / "generated" / "api").rglob("index.html")]
    assert max(sizes) < 1_000_000, sizes  # one page per subpackage (costmodels whole: 1.9 MB)


def test_cli_reference_pages_are_built(site: Path) -> None:
    from commatlas.cli import COMMANDS

    for name in COMMANDS:
        assert (site / "generated" / "cli" / name / "index.html").is_file(), name
    home = (site / "index.html").read_text()
    assert 'href="generated/cli/what-if/"' in home


def test_validation_page_is_computed_at_build(site: Path) -> None:
    html = (site / "generated" / "validation" / "index.html").read_text()
    text = _text(html)
    assert re.search(r"MAPE over the \d+ predicted rows: \d+\.\d%", text)
    assert text.count("ResNet-50") >= 28  # every ResNet-50 row of the measured table
    assert "plots/validation.svg" in html


def test_megatron_validation_page_is_computed_at_build(site: Path) -> None:
    html = (site / "generated" / "validation-llm" / "index.html").read_text()
    text = _text(html)
    assert re.search(r"Mean absolute error over 10 rows: \d+\.\d%", text)
    assert "plots/validation-llm.svg" in html
    # issue 36: predicted against measured per source, shipped and held out
    assert "plots/validation-llm-corpus.svg" in html
    plot = (site / "generated" / "plots" / "validation-llm-corpus.svg").read_text()
    assert plot.startswith("<svg") and "llm-foundry MPT" in plot and "held out" in plot
