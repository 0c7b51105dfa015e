"""The payload classes are plain standard-library dataclasses (issue 33, item 1), and the
package runs no generated source.

* Every payload type the package defines or exports is made by :func:`dataclasses.dataclass`
  (``kw_only``): its fields are the standard module's ``Field`` objects, its ``__init__``,
  ``__repr__`` and ``__eq__`` the ones that module writes; ``fields``, ``asdict``, ``replace`` work.
* No module of the package calls the builtins ``exec`` or ``eval`` (found in the syntax tree, so
  that a method of that name, Redis' ``client.eval`` of a Lua script, is not taken for one).
* ``from_wire``: absent keys take their defaults (a fresh list each time), a missing required key
  is the ``TypeError`` of ``__init__``, null nested values stay None, unknown keys stay in ``raw``.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

import mcp_ref
from mcp_ref import types
from mcp_ref.feature_types import Page
from mcp_ref.types import (
    CallToolResult,
    Implementation,
    InitializeResult,
    TextContent,
    WireModel,
)

PACKAGE = Path(mcp_ref.__file__).resolve().parent


def modules_defining_payloads() -> list[str]:
    """The package's modules with a class deriving from ``WireModel`` (read from the source)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        classes = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
        if any(ast.unparse(base).endswith("WireModel") for node in classes for base in node.bases):
            found.append(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
    return found


def payload_types() -> list[type]:
    """Every payload type: the subclasses of ``WireModel`` of the modules that define them, and of
    the names ``mcp_ref`` exports, with ``WireModel`` and ``Page``."""
    import importlib

    for module in modules_defining_payloads():
        importlib.import_module(module)
    exported = [getattr(mcp_ref, name) for name in mcp_ref.__all__]
    found, todo = {WireModel}, [WireModel]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.startswith("mcp_ref.") and sub not in found:
                found.add(sub)
                todo.append(sub)
    found |= {obj for obj in exported if isinstance(obj, type) and issubclass(obj, WireModel)}
    found.add(Page)
    return sorted(found, key=lambda cls: cls.__name__)


PAYLOADS = payload_types()


@pytest.mark.slow
def test_every_payload_type_is_found():
    assert {"feature_types", "sampling_and_elicitation", "types"} <= {
        name.rsplit(".", 1)[-1] for name in modules_defining_payloads()
    }
    assert {c.__name__ for c in PAYLOADS} >= {
        "TextContent",
        "CallToolResult",
        "Tool",
        "Resource",
        "Page",
        "ElicitResult",
        "CreateMessageParams",
        "LogMessage",
        "Image",
        "Audio",
        "WireModel",
        "DiscoverResult",
        "UnknownContent",
    }


@pytest.mark.parametrize("cls", PAYLOADS, ids=lambda c: c.__name__)
def test_every_payload_type_is_a_standard_dataclass(cls):
    assert dataclasses.is_dataclass(cls)
    # What only the standard decorator leaves: its parameters, and its own Field objects.
    maker = next(klass for klass in cls.__mro__ if "__dataclass_params__" in vars(klass))
    assert maker.__dataclass_params__.eq and not maker.__dataclass_params__.frozen
    assert all(type(f) is dataclasses.Field and f.kw_only for f in dataclasses.fields(cls))
    assert maker.__init__.__qualname__ == f"{maker.__qualname__}.__init__"
    assert cls.__hash__ is None  # eq without frozen: unhashable, as the standard module makes it


@pytest.mark.parametrize(
    "cls", [c for c in PAYLOADS if c.__name__ not in ("Image", "Audio")], ids=lambda c: c.__name__
)
def test_keyword_only_init_with_the_standard_errors(cls):
    required = {
        f.name: f"<{f.name}>"
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    made = cls(**required)
    assert made == cls(**required) and made != object()
    assert dataclasses.asdict(made) == {
        f.name: getattr(made, f.name) for f in dataclasses.fields(cls)
    }
    if required:
        missing = next(iter(required))
        with pytest.raises(
            TypeError, match=f"missing 1 required keyword-only argument: '{missing}'"
        ):
            cls(**{k: v for k, v in required.items() if k != missing})
        with pytest.raises(TypeError, match="positional"):
            cls(*required.values())
    with pytest.raises(TypeError, match="unexpected keyword"):
        cls(**required, no_such_field=1)


def builtin_exec_and_eval_calls(root: Path) -> list[str]:
    """``file:line`` of each call of the builtins ``exec`` or ``eval`` under ``root`` (by name, or
    through ``builtins.``); a method of that name (``client.eval(...)``) is another function."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            named = isinstance(func, ast.Name) and func.id in ("exec", "eval")
            through_builtins = (
                isinstance(func, ast.Attribute)
                and func.attr in ("exec", "eval")
                and isinstance(func.value, ast.Name)
                and func.value.id in ("builtins", "__builtins__")
            )
            if named or through_builtins:
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


@pytest.mark.slow
def test_the_package_calls_neither_exec_nor_eval():
    assert builtin_exec_and_eval_calls(PACKAGE) == []


def test_the_scan_finds_exec_and_eval_but_not_a_method_of_that_name(tmp_path):
    (tmp_path / "a.py").write_text("exec('x = 1')\nimport builtins\nbuiltins.eval('1')\n")
    (tmp_path / "b.py").write_text("def run(client):\n    return client.eval('return 1', 0)\n")
    assert builtin_exec_and_eval_calls(tmp_path) == ["a.py:1", "a.py:3"]


def test_defaults_replace_asdict_and_compare_false_fields():
    a, b = CallToolResult(), CallToolResult()
    assert (
        a.content == [] and a.content is not b.content
    )  # a fresh list each time (default_factory)
    assert CallToolResult(content=[TextContent(text="x")], raw={"a": 1}) == CallToolResult(
        content=[TextContent(text="x")]
    )
    assert dataclasses.replace(a, is_error=True).is_error is True
    assert dataclasses.asdict(CallToolResult(content=[TextContent(text="x")]))["content"] == [
        {"raw": None, "text": "x", "annotations": None, "meta": None}
    ]
    assert "raw" not in repr(TextContent(text="x", raw={"type": "text", "text": "x"}))


def test_a_subclass_without_the_decorator_inherits_init_and_from_wire():
    class Mine(TextContent):
        pass

    assert Mine(text="x") == Mine(text="x") and Mine(text="x").text == "x"
    built = Mine.from_wire({"type": "text", "text": "y", "extra": 1})
    assert (
        type(built) is Mine
        and built.text == "y"
        and built.raw == {"type": "text", "text": "y", "extra": 1}
    )
    assert built.to_wire() == {"type": "text", "text": "y", "extra": 1}


def test_from_wire_defaults_required_keys_null_nesting_and_raw():
    data = {"content": [{"type": "text", "text": "a"}], "surprise": {"kept": True}}
    result = CallToolResult.from_wire(data)
    assert (
        result.content == [TextContent(text="a")]
        and result.is_error is False
        and result.structured_content is None
    )
    assert result.raw is data and result.to_wire() == data
    assert (
        CallToolResult.from_wire({}).content == []
        and CallToolResult.from_wire({}).content is not CallToolResult.from_wire({}).content
    )
    with pytest.raises(
        TypeError,
        match=r"Implementation.__init__\(\) missing 1 required keyword-only argument: 'version'",
    ):
        Implementation.from_wire({"name": "n"})
    with pytest.raises(TypeError, match="expects a JSON object"):
        Implementation.from_wire(["not", "an", "object"])  # type: ignore[arg-type]
    answer = InitializeResult.from_wire(
        {"protocolVersion": "v", "capabilities": {}, "serverInfo": None}
    )
    assert answer.server_info is None  # a null nested value is not built
    answer = InitializeResult.from_wire(
        {"protocolVersion": "v", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}
    )
    assert answer.server_info == Implementation(name="s", version="1")


def test_wire_keys_are_the_fields_on_the_wire_in_camel_case():
    from mcp_ref.sampling_and_elicitation import ElicitResult

    assert types.wire_keys(TextContent) == (
        ("text", "text"),
        ("annotations", "annotations"),
        ("meta", "_meta"),
    )
    assert ("mime_type", "mimeType") in types.wire_keys(types.ImageContent)
    assert "data" not in dict(types.wire_keys(ElicitResult))  # a local field is never sent
    assert types.wire_keys(TextContent) is types.wire_keys(TextContent)  # computed once per class
