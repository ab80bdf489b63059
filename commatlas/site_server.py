"""Serve a built documentation site on 127.0.0.1 (a free port) for browsers in tests and scripts.

``with serve_site(Path("site")) as url:`` yields ``http://127.0.0.1:<port>/``; the server thread
is always shut down when the block ends.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (stdlib name)
        pass


@contextmanager
def serve_site(site_dir: Path) -> Iterator[str]:
    """Serve ``site_dir`` (a built site) until the ``with`` block ends."""
    site_dir = Path(site_dir)
    if not (site_dir / "index.html").is_file():
        raise FileNotFoundError(f"{site_dir}: no index.html (build the site first)")
    handler = functools.partial(_QuietHandler, directory=str(site_dir))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)  # port 0: the OS picks a free one
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
