"""User text shown inside Streamlit's Markdown (warnings, errors, captions) as plain text.

``st.warning``, ``st.error``, ``st.info``, ``st.caption`` and ``st.markdown`` render Markdown
(GitHub-flavoured, with Streamlit's ``:color[...]`` directives, ``:emoji:`` codes and ``$``
math). A URL parameter, an uploaded file's content or an exception message that quotes either is
data, not formatting: ``?sg_dist=[Click](https://x)`` must not become a link, nor ``![x](...)``
an image the browser fetches. :func:`escape_markdown` puts a backslash before every ASCII
punctuation character, which CommonMark allows for all of them (spec 0.31, section 2.4
"Backslash escapes": https://spec.commonmark.org/0.31/#backslash-escapes), so the text shows
verbatim; bare ``https://`` and ``www.`` no longer autolink either.
"""

from __future__ import annotations

import re
import string

_PUNCTUATION = re.compile("([" + re.escape(string.punctuation) + "])")


def escape_markdown(text: object) -> str:
    """``text`` (any object, as ``str``) with every ASCII punctuation character escaped."""
    return _PUNCTUATION.sub(r"\\\1", str(text))
