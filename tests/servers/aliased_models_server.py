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
from pydantic import (
    AliasChoices,
    AliasGenerator,
    AliasPath,
    BaseModel,
    ConfigDict,
    Field,
    RootModel,
)
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


class Camel(TypedDict):
    """No pydantic config of its own: pydantic gives it the enclosing model's alias generator."""

    first_name: str
    nick: Annotated[str, Field(alias="NICK")]  # its own alias wins over the generator's


class Shouted(TypedDict):
    """A config of its own: its generator, not the enclosing model's."""

    __pydantic_config__ = ConfigDict(alias_generator=str.upper)  # type: ignore[misc]

    last_name: str


@dataclasses.dataclass
class Card:
    """A stdlib dataclass without a config: the enclosing model's generator too."""

    card_number: int
    holder: Camel


class Generated(BaseModel):
    """Fields named by ``model_config``'s alias generator, and the TypedDicts and dataclass in it."""

    model_config = ConfigDict(alias_generator=to_camel)

    user_name: str
    camel: Camel
    shouted: Shouted
    card: Card
    cards: list[Card] = []
    inner: Filter | None = None  # a model of its own config: MIN_AGE


class Placed(BaseModel):
    """Fields validated from a place inside the arguments (``AliasPath``), or from alias choices
    whose first is a path: sent at the place each names."""

    city: str = Field(validation_alias=AliasPath("address", "city"))
    street: str = Field(validation_alias=AliasPath("address", "lines", 0))
    number: int = Field(validation_alias=AliasPath("address", "lines", 1))
    zone: str = Field(validation_alias=AliasChoices(AliasPath("geo", "zone"), AliasPath("z")))
    kind: str = Field("home", validation_alias=AliasChoices(AliasPath("meta", "k"), "kind_of"))
    floor: int = Field(
        0, validation_alias=AliasChoices(AliasPath("address", "floor"), AliasPath("level", "n"))
    )


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

    @server.tool()
    def generated(g: Generated) -> str:
        """What the server read."""
        return repr(g)

    @server.tool()
    def placed(p: Placed) -> str:
        """What the server read."""
        return repr(p)

    return server


if __name__ == "__main__":
    build().run_stdio()
