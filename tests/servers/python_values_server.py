"""A server whose tools take rich Python types (tests/client/test_python_arguments.py): a client
passes the Python values, the server gets them converted and sends them back.

    python tests/servers/python_values_server.py        # over stdio
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import sys
import uuid
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp_ref import Context, Server


class Color(enum.Enum):
    """An Enum parameter."""

    RED = "red"
    BLUE = "blue"


@dataclasses.dataclass
class Slot:
    """A dataclass parameter."""

    room: str
    seats: int


@dataclasses.dataclass
class Booking:
    """What ``book`` was given, sent back as structured content."""

    when: dt.datetime
    day: dt.date
    id: uuid.UUID
    amount: Decimal
    color: Color
    slot: Slot
    offset_seconds: float


def build() -> Server:
    server = Server("python-values", version="1.0")

    @server.tool()
    def book(
        when: dt.datetime, day: dt.date, id: uuid.UUID, amount: Decimal, color: Color, slot: Slot
    ) -> Booking:
        """Book a slot; every argument arrives as its Python type."""
        assert isinstance(when, dt.datetime) and type(day) is dt.date
        assert isinstance(id, uuid.UUID) and isinstance(amount, Decimal)
        assert isinstance(color, Color) and isinstance(slot, Slot)
        offset = when.utcoffset()
        assert offset is not None
        return Booking(when, day, id, amount, color, slot, offset.total_seconds())

    @server.tool(headers={"when": "When", "id": "Booking-Id", "note": "Note", "seats": "Seats"})
    def routed(when: dt.datetime, id: uuid.UUID, note: str = "", seats: int = 1) -> str:
        """A tool whose arguments travel in Mcp-Param-* headers too (2026-07-28 over HTTP)."""
        return f"{when.isoformat()}|{id}|{note}|{seats}"

    @server.prompt()
    def plan(day: dt.date, count: int, color: str) -> str:
        """A prompt whose arguments are a date, a number and a string."""
        return f"{day.isoformat()}:{count + 1}:{color}"

    @server.completion(prompt="plan")
    def complete_plan(argument: str, value: str, context: dict) -> list[str]:
        return [f"{argument}={value}", *(f"{k}={v}" for k, v in sorted((context or {}).items()))]

    @server.tool()
    def ask_day(ctx: Context) -> str:
        """Elicit a date and a date-time; return what the client answered, as text."""
        schema = {
            "type": "object",
            "properties": {
                "day": {"type": "string", "format": "date"},
                "at": {"type": "string", "format": "date-time"},
            },
            "required": ["day", "at"],
        }
        answer = ctx.elicit("When?", schema)
        return f"{answer.action}:{answer.content}"

    @server.tool()
    def ask_with_default(ctx: Context) -> str:
        """Elicit a date whose schema's default is a Python date (sent as "2027-01-01")."""
        day = {"type": "string", "format": "date", "default": dt.date(2027, 1, 1)}
        answer = ctx.elicit("Which day?", {"type": "object", "properties": {"day": day}})
        return f"{answer.action}:{answer.content}"

    return server


if __name__ == "__main__":
    build().run_stdio()
