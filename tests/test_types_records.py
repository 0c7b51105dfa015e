"""The payload classes are made by ``mcp_ref.core.types``' own ``dataclass`` (issue 24, a lighter import):
what :func:`dataclasses.dataclass` would make, defined ~40x cheaper, and ``from_wire`` compiled per class.

* Each payload class behaves as the standard ``@dataclass(kw_only=True)`` made from the same class body
  would: the same fields (names, defaults, ``repr``/``compare``), keyword-only ``__init__`` with the same
  errors, ``__repr__``, ``__eq__``, unhashable; ``dataclasses.fields``, ``asdict``, ``replace`` work.
* ``import mcp_ref.core.types`` (and building a payload from the wire) loads neither ``dataclasses`` nor
  ``inspect``; neither does ``from mcp_ref import Client`` load ``dataclasses``' payload machinery for types.
* ``from_wire``: absent keys take their defaults (a fresh list each time), a missing required key is the
  ``TypeError`` of ``__init__``, null nested values stay None, unknown keys stay in ``raw``.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import typing

import pytest

from mcp_ref.core import feature_types, sampling_and_elicitation, types
from mcp_ref.core.types import CallToolResult, Implementation, InitializeResult, TextContent, WireModel

PAYLOADS = sorted({cls for module in (types, feature_types, sampling_and_elicitation) for cls in vars(module).values()
                   if isinstance(cls, type) and "__wire_fields__" in cls.__dict__}, key=lambda c: c.__name__)


def standard_twin(cls: type) -> type:
    """The class the standard module makes from ``cls``'s own body (its bases' fields included)."""
    annotations, namespace = {}, {}
    for klass in reversed(cls.__mro__):
        for name, annotation in vars(klass).get("__annotations__", {}).items():
            if not str(annotation).startswith("ClassVar") and name not in ("__wire_fields__", "__wire_names__"):
                annotations.pop(name, None)  # an override keeps the field's first place, as the standard module does
                annotations[name] = annotation
    for f in cls.__wire_fields__:
        options = {"repr": f.repr, "compare": f.compare, "metadata": f.metadata}
        if f.default_factory is not types.MISSING:
            options["default_factory"] = f.default_factory
        elif f.default is not types.MISSING:
            options["default"] = f.default
        namespace[f.name] = dataclasses.field(**options)
    order = [f.name for f in cls.__wire_fields__]
    namespace["__annotations__"] = {name: annotations[name] for name in order}
    return dataclasses.dataclass(kw_only=True)(type(cls.__name__, (), namespace))


def test_every_payload_class_is_found():
    assert {c.__name__ for c in PAYLOADS} >= {"TextContent", "CallToolResult", "Tool", "Resource", "Page", "ElicitResult"}
    assert WireModel in PAYLOADS


@pytest.mark.parametrize("cls", PAYLOADS, ids=lambda c: c.__name__)
def test_fields_match_what_the_standard_module_makes(cls):
    twin = standard_twin(cls)
    mine = [(f.name, f.default, f.default_factory, f.repr, f.compare, f.kw_only) for f in dataclasses.fields(cls)]
    theirs = [(f.name, f.default, f.default_factory, f.repr, f.compare, f.kw_only) for f in dataclasses.fields(twin)]
    assert mine == theirs
    body_fields = [name for klass in reversed(cls.__mro__) for name, a in vars(klass).get("__annotations__", {}).items()
                   if not str(a).startswith("ClassVar")]
    assert set(body_fields) == {f.name for f in dataclasses.fields(cls)}  # no annotation left out, none invented
    assert dataclasses.is_dataclass(cls) and cls.__hash__ is None


def required_arguments(cls: type) -> dict[str, typing.Any]:
    return {f.name: f"<{f.name}>" for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}


@pytest.mark.parametrize("cls", PAYLOADS, ids=lambda c: c.__name__)
def test_instances_behave_like_the_standard_ones(cls):
    twin, arguments = standard_twin(cls), required_arguments(cls)
    mine, theirs = cls(**arguments), twin(**arguments)
    assert repr(mine) == repr(theirs)
    assert {f.name: getattr(mine, f.name) for f in dataclasses.fields(cls)} == dataclasses.asdict(theirs)
    assert mine == cls(**arguments) and mine != object()
    with pytest.raises(TypeError):
        hash(mine)
    if arguments:
        missing = next(iter(arguments))
        with pytest.raises(TypeError) as raised_mine:
            cls(**{k: v for k, v in arguments.items() if k != missing})
        with pytest.raises(TypeError) as raised_theirs:
            twin(**{k: v for k, v in arguments.items() if k != missing})
        assert str(raised_mine.value) == str(raised_theirs.value)
        with pytest.raises(TypeError, match="positional"):
            cls(*arguments.values())
    with pytest.raises(TypeError, match="unexpected keyword"):
        cls(**arguments, no_such_field=1)


def test_defaults_replace_asdict_and_compare_false_fields():
    a, b = CallToolResult(), CallToolResult()
    assert a.content == [] and a.content is not b.content  # a fresh list each time (default_factory)
    assert CallToolResult(content=[TextContent(text="x")], raw={"a": 1}) == CallToolResult(content=[TextContent(text="x")])
    assert dataclasses.replace(a, is_error=True).is_error is True
    assert dataclasses.asdict(CallToolResult(content=[TextContent(text="x")]))["content"] == [
        {"raw": None, "text": "x", "annotations": None, "meta": None}]
    assert "raw" not in repr(TextContent(text="x", raw={"type": "text", "text": "x"}))


def test_a_subclass_without_the_decorator_inherits_init_and_from_wire():
    class Mine(TextContent):
        pass

    assert Mine(text="x") == Mine(text="x") and Mine(text="x").text == "x"
    built = Mine.from_wire({"type": "text", "text": "y", "extra": 1})
    assert type(built) is Mine and built.text == "y" and built.raw == {"type": "text", "text": "y", "extra": 1}


def test_from_wire_defaults_required_keys_null_nesting_and_raw():
    data = {"content": [{"type": "text", "text": "a"}], "surprise": {"kept": True}}
    result = CallToolResult.from_wire(data)
    assert result.content == [TextContent(text="a")] and result.is_error is False and result.structured_content is None
    assert result.raw is data and result.to_wire() == data
    assert CallToolResult.from_wire({}).content == [] and CallToolResult.from_wire({}).content is not CallToolResult.from_wire(
        {}).content
    with pytest.raises(TypeError, match=r"Implementation.__init__\(\) missing 1 required keyword-only argument: 'version'"):
        Implementation.from_wire({"name": "n"})
    with pytest.raises(TypeError, match="expects a JSON object"):
        Implementation.from_wire(["not", "an", "object"])  # type: ignore[arg-type]
    answer = InitializeResult.from_wire({"protocolVersion": "v", "capabilities": {}, "serverInfo": None})
    assert answer.server_info is None  # a null nested value is not built
    answer = InitializeResult.from_wire({"protocolVersion": "v", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}})
    assert answer.server_info == Implementation(name="s", version="1")


def test_the_payload_module_loads_neither_dataclasses_nor_inspect():
    code = ("import sys\nfrom mcp_ref.core.types import CallToolResult\n"
            "r = CallToolResult.from_wire({'content': [{'type': 'text', 'text': 'hi'}]})\n"
            "assert r == CallToolResult(content=r.content) and repr(r)\n"
            "print(sorted(m for m in ('dataclasses', 'inspect') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
