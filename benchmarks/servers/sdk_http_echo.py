"""The official MCP SDK's side of the HTTP benchmark: the echo server under uvicorn.

Started by ``benchmarks/bench.py`` in its own process, as::

    python benchmarks/servers/sdk_http_echo.py PORT STATELESS

``PORT`` on 127.0.0.1; ``STATELESS`` is ``1`` (no sessions:
``stateless_http=True``) or ``0``.  Replies are JSON (``json_response=True``)
at ``/mcp``.  The server is the one of ``sdk_stdio_echo.py``, with logging at
WARNING: the SDK logs every stateless request at INFO ("Terminating session:
None"), mcp_ref logs nothing per request.  Needs the SDK and uvicorn.
"""

import sys


def main(argv):
    """Serve the SDK echo server over Streamable HTTP until terminated; ``argv`` is ``[PORT, STATELESS]``."""
    import uvicorn
    from sdk_stdio_echo import build_server

    port, stateless = int(argv[0]), argv[1] == "1"
    server = build_server(log_level="WARNING")
    try:  # mcp >= 2: transport options are arguments of the app
        app = server.streamable_http_app(json_response=True, stateless_http=stateless)
    except TypeError:  # mcp 1.x: they are settings
        server.settings.json_response = True
        server.settings.stateless_http = stateless
        app = server.streamable_http_app()
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    return 0


if __name__ == "__main__":
    import _watch

    _watch.watch_parent()
    sys.exit(main(sys.argv[1:]))
