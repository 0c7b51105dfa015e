"""The demo server's stateful WSGI application, for ``gunicorn -k sync`` (tests/http/test_web_app.py):
``gunicorn -k sync -w 1 sync_worker_app:app`` from tests/servers."""

from mcp_ref.workbench.demo import build_server

app = build_server().wsgi_app()
