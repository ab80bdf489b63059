"""The site's comparison tables, computed from the records and cost models at build time.

:func:`comparison_files` writes ``generated/compare/{compressors,allreduce,schedulers}.md`` and
their charts under ``generated/compare/plots/``; one module per page. Every number is a cost
model (or the iteration predictor) evaluated at ``commatlas.docs_site.scenario``; no cell is typed
in.
"""

from __future__ import annotations

from commatlas.docs_site import Files
from taxonomy import Taxonomy


def comparison_files(tax: Taxonomy) -> Files:
    """{path relative to docs/: text} for the three comparison pages and their charts."""
    from commatlas.docs_site.comparisons.allreduce import allreduce_page
    from commatlas.docs_site.comparisons.compressors import compressor_page
    from commatlas.docs_site.comparisons.schedulers import scheduler_page

    files: Files = {}
    for page in (compressor_page, allreduce_page, scheduler_page):
        files.update(page(tax))
    return files
