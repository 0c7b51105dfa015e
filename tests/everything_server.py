"""The reference TypeScript "everything" server (``npx -y @modelcontextprotocol/server-everything``),
started once per test module by the interop tests (tests/interop/test_interop.py, test_interop_tasks.py,
test_hosted_tasks.py): a connected Client, or a skip naming why it could not be fetched or started."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from conftest import command_label, watch_stderr

from mcp_ref import Client
from mcp_ref.errors import ConnectionClosed, RequestTimeout

EVERYTHING = ["npx", "-y", "@modelcontextprotocol/server-everything"]
EVERYTHING_START = 100.0  # seconds: the first npx run downloads the package


@contextmanager
def everything_client(request_timeout: float = 30.0, **options) -> Iterator[Client]:
    """A Client on the everything server (``options`` are Client's), its stderr watched; or a skip
    when npx is missing or the server cannot be fetched and started in :data:`EVERYTHING_START` s."""
    if shutil.which("npx") is None:
        pytest.skip("npx is not on PATH, so the reference everything server cannot be run")
    began = time.monotonic()
    try:
        # The initialize request's timeout bounds the npx download and the server's start.
        client = Client.stdio(
            EVERYTHING, stderr="capture", timeout=EVERYTHING_START, shutdown_timeout=2.0, **options
        )
    except (
        ConnectionClosed,
        RequestTimeout,
        OSError,
    ) as exc:  # could not fetch or start it: skip, with the reason
        pytest.skip(
            f"could not start {' '.join(EVERYTHING)} within {EVERYTHING_START:.0f} s "
            f"({time.monotonic() - began:.1f} s): {type(exc).__name__}: {exc}"
        )
    client.session.default_timeout = request_timeout
    unwatch = watch_stderr(
        command_label(EVERYTHING), lambda: list(client.session.transport.stderr_lines), keep=True
    )
    try:
        yield client
    finally:
        client.close()
        unwatch()
