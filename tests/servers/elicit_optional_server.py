"""An mcp_ref server whose tool ``signup`` asks, with ``ctx.elicit(schema=Signup)``, for a name and
an optional nickname (``Optional[str] = None``) and an optional age with no default
(``Optional[int]``), and answers the action and the dataclass it got."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp_ref import Context, Server

server = Server("optional")


@dataclass
class Signup:
    name: str
    age: Optional[int]  # noqa: UP045 - the spelling the documentation shows
    nickname: Optional[str] = None  # noqa: UP045


@server.tool()
def signup(ctx: Context) -> str:
    """Ask for a name, and an optional age and nickname."""
    answer = ctx.elicit("Sign up", schema=Signup)
    return f"{answer.action} {answer.data}"


if __name__ == "__main__":
    server.run()
