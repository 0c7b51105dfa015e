"""The proxy target (proxy_target.py) that refuses to watch some resources, when told to.

``python proxy_refusing_target.py [--era handshake|modern]``, on stdio.  A resource whose URI
begins ``refused://`` is held back until the tool ``release`` is called (30 s at most), then
refused: in the handshake era its ``resources/subscribe`` gets an error; at 2026-07-28 a
``subscriptions/listen`` naming it is acknowledged without it (basic/patterns/subscriptions
§Acknowledgment: "the subset the server agreed to honor").  A ``kept://{id}`` resource is
subscribed to as any, but its ``resources/unsubscribe`` is held back the same way, then refused
(the subscription stays); the tool ``touch_kept`` says ``kept://1`` changed.  So a test holds a
refusal back while other requests about the same resource arrive.  After the tool
``refuse_notes``, a 2026 listen naming a ``note://`` resource is acknowledged without it, at once;
``end_streams`` ends every listen stream (the client's re-opened one then meets that refusal).
"""

import argparse
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import proxy_target

from mcp_ref.errors import InvalidParams
from mcp_ref.extension import Extension

STALL = 30.0
REFUSED = "refused://"
KEPT = "kept://"
NOTES = "note://"


class Refusing(Extension):
    """Holds back, then refuses, what is asked about the ``refused://`` resources."""

    name = "test/refusing"

    def __init__(self, released: threading.Event, refusing_notes: threading.Event):
        self.released = released
        self.refusing_notes = refusing_notes

    def intercept_request(self, call, proceed):
        params = call.params or {}
        uri = str(params.get("uri", ""))
        refusing = {"resources/subscribe": REFUSED, "resources/unsubscribe": KEPT}
        if call.method in refusing and uri.startswith(refusing[call.method]):
            self.released.wait(STALL)
            raise InvalidParams(f"Invalid params: {uri} cannot be {call.method.split('/')[1]}d")
        if call.method == "subscriptions/listen":
            wanted = params.get("notifications") or {}
            uris = wanted.get("resourceSubscriptions") or []
            if any(str(uri).startswith(REFUSED) for uri in uris):
                self.released.wait(STALL)
                uris = [uri for uri in uris if not str(uri).startswith(REFUSED)]
            if self.refusing_notes.is_set():
                uris = [uri for uri in uris if not str(uri).startswith(NOTES)]
            if "resourceSubscriptions" in wanted:
                wanted["resourceSubscriptions"] = uris
        return proceed()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--era", default="handshake", choices=["handshake", "modern"])
    args = parser.parse_args()
    server = proxy_target.build(args.era)
    released = threading.Event()

    @server.tool()
    def release() -> str:
        """Let the held-back refusals go."""
        released.set()
        return "released"

    @server.resource("kept://{id}")
    def kept(id: str) -> str:
        """A resource whose subscription cannot be ended."""
        return f"kept {id}"

    @server.tool()
    def touch_kept() -> str:
        """Change kept://1 (subscribers are told)."""
        server.notify_resource_updated("kept://1")
        return "touched"

    refusing_notes = threading.Event()

    @server.tool()
    def refuse_notes() -> str:
        """From now on, a listen naming a note:// resource is acknowledged without it."""
        refusing_notes.set()
        return "refusing"

    @server.tool()
    def end_streams() -> str:
        """End every listen stream gracefully, as a server shutting down does."""
        return str(server.close_subscriptions())

    server.add_extension(Refusing(released, refusing_notes))
    server.run_stdio()


if __name__ == "__main__":
    main()
