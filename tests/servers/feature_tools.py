"""A server for tests/server/test_tools.py.

``feature_tools.py``        tools exercising schemas, validation, errors, structured output
``feature_tools.py paged``  page_size=2, exactly five tools (t1..t5) and five prompts (p1..p5)
"""

from __future__ import annotations

import enum
import json
import sys
import threading
from dataclasses import dataclass
from typing import Literal

from mcp_ref import Server, ToolError


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


@dataclass
class Point:
    x: int
    y: int = 0


@dataclass
class Report:
    city: str
    temperature: float
    tags: list[str]


DRAFT7 = "http://json-schema.org/draft-07/schema#"
# "dependencies" is a draft-07 keyword (2020-12 ignores it); "dependentRequired" is 2020-12 (draft-07 ignores it).
DIALECT_PROBE = {
    "type": "object",
    "properties": {
        "a": {"type": "integer"},
        "b": {"type": "integer"},
        "c": {"type": "integer"},
        "d": {"type": "integer"},
    },
    "dependencies": {"a": ["b"]},
    "dependentRequired": {"c": ["d"]},
}


def paged() -> Server:
    server = Server("feature-tools-paged", page_size=2)

    def numbered(i: int):
        def tool() -> str:
            return f"tool {i}"

        return tool

    for i in range(1, 6):
        server.add_tool(numbered(i), name=f"t{i}", description=f"Tool number {i}")

    # As many prompts as tools, so a tools cursor's offset would be valid for prompts/list too.
    for i in range(1, 6):
        server.add_prompt(numbered(i), name=f"p{i}")
    return server


def full() -> Server:
    server = Server("feature-tools")
    calls: list[dict] = []
    calls_lock = threading.Lock()

    @server.tool()
    def hints(
        i: int,
        f: float,
        s: str,
        b: bool,
        items: list[int],
        mapping: dict[str, float],
        color: Color,
        point: Point,
        mode: Literal["fast", "slow"] = "fast",
        maybe: str | None = None,
    ) -> str:
        """Report the Python types the arguments arrived as.

        Args:
            i: An integer.
            f: A float.
            s: A string.
            b: A boolean.
            items: Some integers.
            mapping: Names to numbers.
            color: A colour.
            point: A point.
            mode: How fast.
            maybe: Perhaps a string.
        """
        return json.dumps(
            {
                "i": type(i).__name__,
                "f": type(f).__name__,
                "s": type(s).__name__,
                "b": type(b).__name__,
                "items": [type(x).__name__ for x in items],
                "mapping": type(mapping).__name__,
                "color": f"{type(color).__name__}.{color.name}"
                if isinstance(color, Color)
                else repr(color),
                "point": f"{type(point).__name__}({point.x},{point.y})"
                if isinstance(point, Point)
                else repr(point),
                "mode": mode,
                "maybe": maybe,
            }
        )

    @server.tool(
        description="A tool with a hand-written schema.",
        input_schema={
            "type": "object",
            "properties": {"n": {"type": "integer", "minimum": 10}},
            "required": ["n"],
        },
    )
    def explicit(n) -> str:
        """This docstring is not the description."""
        return f"n={n}"

    @server.tool(input_schema={"$schema": DRAFT7, **DIALECT_PROBE})
    def draft7(a: int = 0, b: int = 0, c: int = 0, d: int = 0) -> str:
        """Validated as draft-07."""
        return "ok"

    @server.tool(input_schema=dict(DIALECT_PROBE))
    def default_dialect(a: int = 0, b: int = 0, c: int = 0, d: int = 0) -> str:
        """Validated as 2020-12 (no $schema)."""
        return "ok"

    @server.tool()
    def record(n: int, label: str = "x") -> str:
        """Remember a call (to prove invalid calls never reach the handler)."""
        with calls_lock:
            calls.append({"n": n, "label": label})
        return "recorded"

    @server.tool()
    def recorded() -> str:
        """How many times record ran."""
        with calls_lock:
            return str(len(calls))

    @server.tool()
    def crash() -> str:
        """Fail with an unexpected exception."""
        raise RuntimeError("secret-detail-7f3a in /srv/private/config.py")

    @server.tool()
    def refuse() -> str:
        """Fail with a ToolError the model should see."""
        raise ToolError("The moon is not available today")

    @server.tool()
    def report(city: str) -> Report:
        """A structured weather report."""
        return Report(city=city, temperature=21.5, tags=["sunny", "calm"])

    @server.tool(
        output_schema={
            "type": "object",
            "properties": {"count": {"type": "integer"}},
            "required": ["count"],
        }
    )
    def broken_output() -> dict:
        """Returns data that breaks its own outputSchema."""
        return {"count": "many"}

    @server.tool(
        annotations={
            "title": "Careful",
            "readOnlyHint": True,
            "destructiveHint": False,
            "openWorldHint": False,
        }
    )
    def annotated() -> str:
        """A tool with annotations."""
        return "annotated"

    @server.tool()
    def mutate(action: Literal["add", "remove"], name: str) -> str:
        """Add or remove a tool at run time."""
        if action == "add":
            server.add_tool(
                lambda: f"I am {name}", name=name, description=f"added at run time: {name}"
            )
        else:
            server.remove_tool(name)
        return f"{action} {name}"

    return server


if __name__ == "__main__":
    (paged() if sys.argv[1:] == ["paged"] else full()).run_stdio()
