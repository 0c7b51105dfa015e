"""The app of tests/http/test_gunicorn_stop.py's retiring workers (gunicorn TTIN/TTOU): the demo
server, whose ``close()`` (called by mcp_ref.http.gunicorn_hooks when the worker is told to
stop) writes a line naming its pid to stderr once the mcp_ref app is closed."""

import os
import sys

from mcp_ref.workbench.demo import build_server

mcp_app = build_server().wsgi_app()


class MarkedApp:
    """The mcp_ref app, with a line on stderr once its ``close()`` has run."""

    def __call__(self, environ, start_response):
        return mcp_app(environ, start_response)

    def close(self) -> None:
        """Close the mcp_ref app, then say so."""
        mcp_app.close()
        print(f"mcp_ref app closed in pid {os.getpid()}", file=sys.stderr, flush=True)


wsgi_app = MarkedApp()
