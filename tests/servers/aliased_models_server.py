"""A server whose tool takes and returns a pydantic model named differently each way
(tests/client/test_python_arguments.py): its ``inputSchema`` names the fields by validation alias,
its ``outputSchema`` by serialization alias.

    python tests/servers/aliased_models_server.py        # over stdio
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Annotated

import pydantic
from pydantic import AliasChoices, AliasGenerator, BaseModel, ConfigDict, Field, RootModel
from pydantic.alias_generators import to_camel
from typing_extensions import TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp_ref import Server


class Filter(BaseModel):
    """A nested model: MIN_AGE in, minAge out (an AliasGenerator)."""

    model_config = ConfigDict(
        alias_generator=AliasGenerator(validation_alias=str.upper, serialization_alias=to_camel)
    )

    min_age: int


class Filters(RootModel[list[Filter]]):
    """A root model: its value is the list."""


class Query(BaseModel):
    """Each way a field can be named: a serialization alias only, alias choices, one alias."""

    user_id: int = Field(serialization_alias="userId")
    mode: str = Field(
        "exact", validation_alias=AliasChoices("match", "mode"), serialization_alias="matchMode"
    )
    tag: str = Field("", alias="Tag")
    filters: list[Filter] = []
    by_name: dict[str, Filter] = {}
    more: Filters = Filters([])


@pydantic.dataclasses.dataclass
class Aliased:
    """A pydantic dataclass: an aliased field, and a model in it."""

    max_age: int = Field(alias="MaxAge")
    inner: Filter | None = None


@dataclasses.dataclass
class Plain:
    """A stdlib dataclass holding a model."""

    inner: Filter


class Limits(TypedDict):
    """A TypedDict whose key is aliased (pydantic reads ``Field`` in ``Annotated``)."""

    at_most: Annotated[int, Field(alias="AtMost")]


class Boxes(BaseModel):
    """Models inside dataclasses and TypedDicts: each named as pydantic validates it."""

    aliased: Aliased
    plain: Plain
    limits: Limits
    maybe: Limits | None = None
    many: list[Limits] = []


def build() -> Server:
    server = Server("aliased-models", version="1.0")

    @server.tool()
    def lookup(q: Query) -> Query:
        """Return the query the server read."""
        return q

    @server.tool()
    def boxes(b: Boxes) -> str:
        """What the server read."""
        return repr(b)

    return server


if __name__ == "__main__":
    build().run_stdio()
