"""mcp_ref's side of the shared-state benchmark (issue 22): a rate-limited tool, and one that adds a tool.

Started by ``benchmarks/bench.py`` (``--state-only``) in its own process, as::

    python benchmarks/servers/mcp_ref_state_app.py PORT SERVER [SESSIONS]

``PORT`` on 127.0.0.1; ``SERVER`` is ``gunicorn`` (one worker, ``-k gthread``, 8 threads: what a
deployment runs, served through gunicorn's Python API so that this process, gunicorn's master,
watches the benchmark) or ``stdlib`` (``Server.run_http``).  ``SESSIONS`` is ``stateless`` (the
default: what the 2026-07-28 rows use) or ``sessions`` (``stateless=False``: handshake-era clients
get a session, kept with the rest of the state, so with ``MCP_REF_STATE`` any deployment sharing the
Redis serves it).  The app is at ``/mcp``; its replies are JSON when the answer is all there is to
send (a ``tools/call`` here), SSE otherwise (``subscriptions/listen``: with ``json_response=True``
its notifications would have nowhere to go).  Its state is the one ``MCP_REF_STATE`` names
(``redis://...``), or, unset, this process's own memory.  Tools: ``limited``
(``rate_limit="1000000/minute"``, and the server's own limit likewise, so nothing is refused but
every call is counted), ``pid`` (which process answers: the benchmark reads that process's CPU
time), and ``add_tool`` (registers a new tool, so that ``notifications/tools/list_changed`` goes out
to every listener, over the bus when the state is shared).  Only mcp_ref's public API is used.
"""

import os
import sys

#: High enough that no call of a run is refused; every call still takes a token.
LIMIT = "1000000/minute"


def build_server():
    """The benchmark's mcp_ref ``Server`` (see the module docstring)."""
    from mcp_ref import Server

    server = Server("bench-state", rate_limit=LIMIT)

    @server.tool(rate_limit=LIMIT)
    def limited(text: str) -> str:
        """Return the text unchanged, after the server's and this tool's rate limits admitted the call."""
        return text

    @server.tool()
    def pid() -> str:
        """The id of the process that answered."""
        return str(os.getpid())

    @server.tool()
    def add_tool(name: str) -> str:
        """Register a tool named ``name``: tools/list_changed goes to every listener."""
        server.add_tool(lambda: "late", name=name, description="added at run time")
        return name

    return server


#: The ``SESSIONS`` argument: whether the app is stateless (see the module docstring).
STATELESS = {"stateless": True, "sessions": False}


def run_gunicorn(port, stateless=True):
    """Serve with gunicorn, one gthread worker of 8 threads; the app is built in the worker (after the fork)."""
    from gunicorn.app.base import BaseApplication

    class App(BaseApplication):
        def load_config(self):
            for key, value in {
                "bind": f"127.0.0.1:{port}",
                "workers": 1,
                "worker_class": "gthread",
                "threads": 8,
                "graceful_timeout": 2,
                "loglevel": "warning",
                "keepalive": 30,
            }.items():
                self.cfg.set(key, value)

        def load(self):
            return build_server().wsgi_app(stateless=stateless)

    App().run()


def main(argv):
    """Serve until terminated; ``argv`` is ``[PORT, SERVER]`` or ``[PORT, SERVER, SESSIONS]``."""
    port, kind = int(argv[0]), argv[1]
    stateless = STATELESS[argv[2] if len(argv) > 2 else "stateless"]
    if kind == "gunicorn":
        run_gunicorn(port, stateless)
    else:
        build_server().run_http("127.0.0.1", port, stateless=stateless)
    return 0


if __name__ == "__main__":
    import _watch

    _watch.watch_parent()
    sys.exit(main(sys.argv[1:]))
