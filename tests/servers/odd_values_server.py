"""A stdio server whose tools meet values JSON has no room for (tests/server/test_odd_values.py):
a dataclass argument with a key it does not declare, a float argument too large for a float
(``1e400``, which the parser reads as infinity), and results holding NaN or an infinity, holding themselves, nested too deeply, or with a
dataclass field never set.

    python tests/servers/odd_values_server.py
"""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path
from typing import TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp_ref import CallToolResult, Server, TextContent


@dataclasses.dataclass
class Point:
    """A dataclass parameter."""

    x: int
    y: int


@dataclasses.dataclass
class Circle:
    """A second dataclass, for a union of two."""

    r: int


class Tagged(TypedDict, total=False):
    """A TypedDict, which keeps keys it does not name."""

    tag: str


@dataclasses.dataclass
class Segment:
    """A dataclass holding dataclasses."""

    start: Point
    end: Point


@dataclasses.dataclass
class Counter:
    """A dataclass with a field set after ``__init__`` (or, here, never)."""

    count: int = dataclasses.field(init=False)


def build() -> Server:
    server = Server("odd-values", version="1.0")

    @server.tool()
    def place(p: Point, label: str = "") -> str:
        """Place a point."""
        return f"{label}{p.x},{p.y}"

    @server.tool()
    def measure(segment: Segment | None = None) -> str:
        """Measure a segment (dataclasses inside a dataclass, in an Optional)."""
        return "none" if segment is None else f"{segment.end.x - segment.start.x}"

    @server.tool()
    def shape(s: Point | Circle) -> str:
        """Name a shape (a union of two dataclasses)."""
        return type(s).__name__

    @server.tool()
    def mark(m: Point | Tagged) -> str:
        """Name what a mark is (a dataclass or a TypedDict)."""
        return type(m).__name__

    @server.tool()
    def half(x: float, xs: list[float] | None = None) -> str:
        """Halve a number (and a list of them)."""
        return repr([x / 2, *(v / 2 for v in xs or [])])

    @server.tool()
    def ratio() -> dict[str, float]:
        """A structured result holding NaN."""
        return {"ratio": math.nan}

    @server.tool()
    def forever() -> float:
        """A number result that is infinite."""
        return math.inf

    @server.tool()
    def text_of() -> dict:
        """A result with no output schema whose JSON text would hold -Infinity."""
        return {"low": -math.inf}

    @server.tool()
    def shaped() -> CallToolResult:
        """A CallToolResult the tool built itself, its structured content holding NaN."""
        return CallToolResult(content=[TextContent(text="x")], structured_content={"v": math.nan})

    @server.tool()
    def graph() -> dict:
        """A node that links to itself."""
        node: dict = {"name": "a"}
        node["next"] = node
        return node

    @server.tool()
    def chain(depth: int):
        """Dicts nested ``depth`` deep (no output schema: its JSON text only)."""
        nested: dict = {}
        for _ in range(depth):
            nested = {"a": nested}
        return nested

    @server.tool()
    def unset() -> Counter:
        """A dataclass whose init=False field was never set."""
        return Counter()

    @server.tool()
    def greet(name: str) -> str:
        """Greet someone."""
        return f"hello {name}"

    return server


if __name__ == "__main__":
    build().run()
