"""A server for the inspector's forms (tests/inspector/test_page_forms.py): a tool whose input schema
has every shape the page builds a form for (strings with defaults, integers with bounds, numbers,
booleans, enums, a oneOf of consts, arrays of strings and of objects, a nested object, and a field
of any JSON), echoing what it was given; a tool and a prompt whose names are those of
``Object.prototype``'s members (``__proto__``, ``constructor``, ...), echoing theirs; a tool
answering with audio; a URL-mode elicitation.

    python tests/servers/form_server.py        # over stdio
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp_ref import Context, Server
from mcp_ref.types import AudioContent

SCHEMA = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "description": "A title.", "default": "untitled"},
        "count": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
        "ratio": {"type": "number"},
        "urgent": {"type": "boolean", "default": False},
        "maybe": {"type": "boolean"},
        "colour": {"type": "string", "enum": ["red", "green", "blue"]},
        "size": {
            "oneOf": [
                {"const": "s", "title": "Small"},
                {"const": "l", "title": "Large"},
            ]
        },
        "tags": {"type": "array", "items": {"type": "string"}},
        "points": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                "required": ["x", "y"],
            },
        },
        "owner": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "address": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                },
            },
            "required": ["name"],
        },
        "extra": {"description": "Any JSON at all."},
    },
    "required": ["title", "colour"],
}

#: Names a page's plain ``{}`` mistakes for its prototype's members.
PROTO_NAMES = ("__proto__", "constructor", "toString", "hasOwnProperty")
PROTO_SCHEMA = {
    "type": "object",
    "properties": {
        **{name: {"type": "string"} for name in PROTO_NAMES},
        "nested": {
            "type": "object",
            "properties": {name: {"type": "string"} for name in PROTO_NAMES},
        },
    },
}


def build() -> Server:
    """The form server."""
    server = Server("form-server", version="1.0.0")

    def shapes(
        title: str,
        colour: str,
        count: Any = None,
        ratio: Any = None,
        urgent: Any = None,
        maybe: Any = None,
        size: Any = None,
        tags: Any = None,
        points: Any = None,
        owner: Any = None,
        extra: Any = None,
    ) -> str:
        given = dict(
            title=title,
            colour=colour,
            count=count,
            ratio=ratio,
            urgent=urgent,
            maybe=maybe,
            size=size,
            tags=tags,
            points=points,
            owner=owner,
            extra=extra,
        )
        return json.dumps({k: v for k, v in given.items() if v is not None}, sort_keys=True)

    server.add_tool(
        shapes, name="shapes", description="Echoes its arguments as JSON.", input_schema=SCHEMA
    )

    def proto(
        ctx: Context,
        __proto__: Any = None,
        constructor: Any = None,
        toString: Any = None,
        hasOwnProperty: Any = None,
        nested: Any = None,
    ) -> str:
        return json.dumps(ctx.request.params["arguments"], sort_keys=True)

    server.add_tool(
        proto, name="proto", description="Echoes its arguments.", input_schema=PROTO_SCHEMA
    )

    @server.prompt(name="proto")
    def proto_prompt(__proto__: str = "", constructor: str = "") -> str:
        """Echoes its arguments."""
        return json.dumps({"__proto__": __proto__, "constructor": constructor}, sort_keys=True)

    @server.resource("proto://{constructor}", name="proto")
    def proto_resource(constructor: str) -> str:
        """Says its variable."""
        return f"constructor={constructor}"

    @server.tool
    def beep() -> AudioContent:
        """Answers with a (tiny) WAV sound."""
        return AudioContent(
            data=base64.b64encode(b"RIFF\x24\x00\x00\x00WAVE").decode(), mime_type="audio/wav"
        )

    @server.tool
    def visit(ctx: Context) -> str:
        """Sends the user to a page (URL-mode elicitation)."""
        answer = ctx.elicit_url(
            "Please sign in at the example page.",
            "https://example.com/sign-in?session=1",
            elicitation_id="form-1",
        )
        return f"visited: {answer.action}"

    return server


if __name__ == "__main__":
    build().run_stdio()
