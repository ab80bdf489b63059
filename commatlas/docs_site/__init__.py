"""Generators of the documentation site's pages, each a pure function of records and models.

Every generator returns ``dict[str, str]``: a path relative to ``docs/`` (``records/<id>.md``,
``generated/guides/<name>.md``, ``generated/plots/<name>.svg`` ...) and the file's text.
:func:`commatlas.docs_pages.write_generated_pages` is the one writer: it unions every
generator's files and swaps each generated folder in whole (the MkDocs hook and
``commatlas docs generate`` both call it). Pages never hold typed-in numbers: they are computed
from ``costmodels`` and ``taxonomy`` when the site is built.
"""

from __future__ import annotations

Files = dict[str, str]
