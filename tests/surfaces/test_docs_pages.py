"""The page generators, without building the site: numbers, links, coverage, the writer.

Independent checks: the ring all-reduce plot points are recomputed from the alpha-beta-gamma
formula with the scenario's link numbers typed from their standards (InfiniBand HDR 200 Gbit/s,
0.9 achievable; H200 4.8 TB/s); record and module coverage is counted from the files on disk.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import costmodels
from commatlas import docs_pages
from commatlas.docs_site import record_plot, scenario
from commatlas.docs_site.api_reference import PACKAGES, api_files, api_page_of, public_modules
from commatlas.docs_site.record_page import record_page, resolve, usage_example
from commatlas.docs_site.scenario_page import scenario_page
from commatlas.docs_site.taxonomy_pages import surveys_page, taxonomy_page, taxonomy_picture
from reference_impls.entry_points import entries
from taxonomy import load_taxonomy

ROOT = Path(__file__).parents[2]
TAX = load_taxonomy()
RECORDS = sorted(TAX.records.values(), key=lambda r: r.id)
LINK = re.compile(r"\]\(\.\./records/([a-z0-9-]+)\.md\)")


def test_ring_plot_points_equal_the_hand_formula() -> None:
    """Up to 8 workers (one node of the scenario) the ring runs over NVLink 4, from two nodes on
    over InfiniBand HDR (issue 17, item 12: p = 2 used the network's beta)."""
    from costmodels.hardware import get_link

    data = record_plot.plot_data("ring-allreduce")
    hdr_alpha, hdr_beta, gamma = 2e-6, 1 / (200e9 / 8 * 0.9), 3 / 4.8e12
    nvlink = get_link("nvlink4")
    for panel, p, n in (("p", data.x, 100e6), ("n", 64.0, data.x)):
        rows = data[data.panel == panel]
        p_, n_ = (rows.x, n) if panel == "p" else (p, rows.x)
        one_node = np.asarray(p_) <= 8
        alpha = np.where(one_node, nvlink.alpha_s, hdr_alpha)
        beta = np.where(one_node, nvlink.beta_s_per_byte, hdr_beta)
        expected = 2 * (p_ - 1) * alpha + 2 * (p_ - 1) / p_ * n_ * beta + (p_ - 1) / p_ * n_ * gamma
        np.testing.assert_allclose(rows.seconds, expected, rtol=1e-12)


@pytest.mark.parametrize("model_id", costmodels.ids())
def test_every_plot_has_finite_positive_points_for_every_variant(model_id: str) -> None:
    model = costmodels.get(model_id)
    data = record_plot.plot_data(model_id)
    assert set(data.variant) == set(model.variants)
    assert np.all(np.isfinite(data.seconds)) and np.all(data.seconds > 0), model_id
    for _, rows in data[data.panel == "n"].groupby("variant"):
        assert np.all(np.diff(rows.seconds.to_numpy()) >= 0), "more bytes never take less time"
    if any(s.name == "g" for s in model.symbols):  # node-structured: whole nodes only
        assert np.all(data[data.panel == "p"].x % scenario.GPUS_PER_NODE == 0)


def test_every_entry_point_has_a_usage_example_on_its_page() -> None:
    for target in entries():
        note, example = usage_example(resolve(target))
        assert example, f"{target}: no Example:: block in its or its module's docstring"
    page = record_page(TAX.records["ssp"])
    assert "Usage (5 processes: 4 workers, 1 server" in page and "ssp_train(params" in page


def test_usage_example_reads_the_literal_block_only() -> None:
    def documented() -> None:
        """Do it.

        Example (2 ranks)::

            documented()
            documented()  # twice

        After the block.
        """

    assert usage_example(documented) == ("2 ranks", ["documented()", "documented()  # twice"])


def test_related_links_show_names() -> None:
    record = TAX.records["ring-allreduce"]
    page = record_page(record, {r.id: r.name for r in RECORDS})
    related = record.related[0]
    assert f"- [{TAX.records[related.id].name}]({related.id}.md) ({related.relation})" in page


def test_taxonomy_page_links_every_record_once_under_its_category() -> None:
    text = taxonomy_page(RECORDS)
    assert Counter(LINK.findall(text)) == Counter(r.id for r in RECORDS)
    for level in ("algorithm", "framework", "infrastructure"):
        count = sum(r.level == level for r in RECORDS)
        assert re.search(rf"^## .* \({count}\) \{{#{level}\}}$", text, re.M), level
    for top, count in Counter(r.category[0] for r in RECORDS).items():
        assert re.search(rf"^### .* \({count}\) \{{#{top}\}}$", text, re.M), top


def test_survey_map_places_every_record_in_its_section() -> None:
    text = surveys_page(RECORDS)
    for survey in ("A", "B"):
        part = text.split(f"## Survey {survey}")[1].split("\n## ")[0]
        part, _, outside = part.partition("**Outside its scope**")
        sections = re.split(r"^### ", part, flags=re.M)[1:]
        placed = {r.id: getattr(r.placement, survey) for r in RECORDS}
        for section in sections:
            anchor = re.search(r"\{#([a-z]-[a-z-]+)\}", section).group(1)
            slug = anchor.split("-", 1)[1]
            for record_id in LINK.findall(section):
                assert placed[record_id].split("/")[0] == slug, (survey, record_id)
        listed = Counter(LINK.findall("".join(sections))) + Counter(LINK.findall(outside))
        assert listed == Counter(r.id for r in RECORDS), survey
    crosswalk = text.split("## Crosswalk")[1]
    numbers = [int(x) for x in re.findall(r"\| (\d+)(?= \|)", crosswalk)]
    assert sum(numbers) == len(RECORDS)


def test_taxonomy_picture_labels_every_level_and_category_with_its_count() -> None:
    svg = taxonomy_picture(RECORDS)
    for top, count in Counter(r.category[0] for r in RECORDS).items():
        words = top.replace("-", " ").split()[-1]
        assert re.search(rf"{words} \({count}\)", svg, re.I), top
    assert "rotate(" not in svg  # issue 17, item 12: every label horizontal, none vertical


def test_scenario_page_lists_the_values_used() -> None:
    values = scenario.symbol_values("topk-sparsification", 64, scenario.MESSAGE_BYTES)
    text = scenario_page()
    for key in ("alpha", "beta", "gamma", "k", "d", "rows", "cols"):
        latex = costmodels.SYMBOLS[key].latex
        row = next(line for line in text.splitlines() if line.startswith(f"| \\({latex}\\) |"))
        assert float(row.split("|")[3]) == pytest.approx(float(values[key]), rel=1e-3), key


def test_api_reference_lists_every_public_module_on_disk() -> None:
    for package in PACKAGES:
        on_disk = set()
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            if not any(part.startswith("_") for part in parts):
                on_disk.add(".".join(parts))
        assert set(public_modules(package)) == on_disk
        pages = {p: t for p, t in api_files().items() if p.startswith(f"generated/api/{package}")}
        rendered = [m for t in pages.values() for m in re.findall(r"^::: (\S+)$", t, re.M)]
        assert sorted(rendered) == sorted(on_disk)  # each module once, on one page
        for module in on_disk:
            assert f"::: {module}\n" in pages[api_page_of(module)]


def test_the_costmodels_api_is_one_page_per_subpackage() -> None:
    """Issue 42, item 12: costmodels on one page was 1.9 MB of HTML."""
    files = api_files()
    assert "generated/api/costmodels/llm.md" in files
    top = files["generated/api/costmodels.md"]
    assert "](costmodels/llm.md)" in top and "::: costmodels.llm." not in top
    assert api_page_of("costmodels.llm.step") == "generated/api/costmodels/llm.md"
    assert api_page_of("costmodels.model") == "generated/api/costmodels.md"


def test_generate_rejects_clashes_and_stray_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    def twice(tax: object) -> dict[str, str]:
        return {"generated/x.md": "# x"}

    monkeypatch.setattr(docs_pages, "_generators", lambda: [twice, twice])
    with pytest.raises(ValueError, match="generated twice"):
        docs_pages.generate(TAX)
    monkeypatch.setattr(docs_pages, "_generators", lambda: [lambda tax: {"index.md": "# no"}])
    with pytest.raises(ValueError, match="not under"):
        docs_pages.generate(TAX)


def test_write_tree_is_whole_or_nothing_and_idempotent(tmp_path: Path) -> None:
    out = tmp_path / "generated"
    first = docs_pages.write_tree(out, {"a.md": "# a", "plots/b.svg": "<svg/>"})
    stamp = {p: p.stat().st_mtime_ns for p in first}
    docs_pages.write_tree(out, {"a.md": "# a", "plots/b.svg": "<svg/>"})  # unchanged: untouched
    assert {p: p.stat().st_mtime_ns for p in first} == stamp
    with pytest.raises(TypeError):
        docs_pages.write_tree(out, {"a.md": "# new", "c.md": None})  # type: ignore[dict-item]
    assert (out / "a.md").read_text() == "# a" and not (out / "c.md").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["generated"]  # no staging folder left
    docs_pages.write_tree(out, {"a.md": "# new"})
    assert sorted(p.name for p in out.rglob("*")) == ["a.md"]  # stale files are gone


def test_record_without_links_says_so() -> None:
    record = TAX.records["ring-allreduce"].model_copy(
        update={"cost_model": None, "reference_impl": None}
    )
    text = record_page(record)
    assert "No cost model yet." in text and "No reference implementation yet." in text
    assert "plots/" not in text
