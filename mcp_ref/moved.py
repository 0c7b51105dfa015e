"""Modules that moved when the package was laid out in layers (core, server, client, transports,
extras, workbench): the old dotted name still imports, with a DeprecationWarning, until 1.0.

``mcp_ref/__init__.py`` puts a finder last on ``sys.meta_path`` that asks :func:`find_spec` here, so
this table is read only when an old name is imported.
"""

from __future__ import annotations

import importlib
import importlib.util
import warnings
from types import ModuleType

#: Old name -> new name.
MOVED = {
    "mcp_ref.jsonrpc": "mcp_ref.core.jsonrpc",
    "mcp_ref.errors": "mcp_ref.core.errors",
    "mcp_ref.lifecycle": "mcp_ref.core.lifecycle",
    "mcp_ref.session": "mcp_ref.core.session",
    "mcp_ref.types": "mcp_ref.core.types",
    "mcp_ref.envelope": "mcp_ref.core.envelope",
    "mcp_ref.validation": "mcp_ref.core.validation",
    "mcp_ref.signing": "mcp_ref.core.signing",
    "mcp_ref.pagination": "mcp_ref.core.pagination",
    "mcp_ref.uri_template": "mcp_ref.core.uri_template",
    "mcp_ref.transports.base": "mcp_ref.core.transport",
    "mcp_ref.signatures": "mcp_ref.server.signatures",
    "mcp_ref.server.policy": "mcp_ref.extras.policy",
    "mcp_ref.ratelimit": "mcp_ref.extras.ratelimit",
    "mcp_ref.server.tasks": "mcp_ref.extras.tasks",
    "mcp_ref.client.tasks": "mcp_ref.extras.client_tasks",
    "mcp_ref.files": "mcp_ref.extras.files",
    "mcp_ref.client.approval": "mcp_ref.extras.approval",
    "mcp_ref.cli": "mcp_ref.workbench.cli",
    "mcp_ref.demo": "mcp_ref.workbench.demo",
    "mcp_ref.walkthrough": "mcp_ref.workbench.walkthrough",
    "mcp_ref.check": "mcp_ref.workbench.check",
    "mcp_ref.diagram": "mcp_ref.workbench.diagram",
    "mcp_ref.terminal": "mcp_ref.workbench.terminal",
    "mcp_ref.wire_check": "mcp_ref.workbench.wire_check",
    "mcp_ref.transports.wsgi_server": "mcp_ref.workbench.wsgi_server",
    "mcp_ref.transports.connection_limits": "mcp_ref.workbench.connection_limits",
    "mcp_ref.auth.demo_server": "mcp_ref.workbench.demo_auth_server",
    "mcp_ref.auth.login": "mcp_ref.workbench.login",
}


def find_spec(name: str):
    """The spec of an old module name: the module it moved to, under its old name; else None."""
    new = MOVED.get(name)
    if new is None:
        return None
    warnings.warn(f"{name} moved to {new}; the old name goes away in 1.0", DeprecationWarning, stacklevel=3)
    spec = importlib.util.find_spec(new)
    return None if spec is None else importlib.util.spec_from_loader(name, _AliasLoader(new))


class _AliasLoader:
    """Loads an old name as the module it moved to (the same module object, not a copy)."""

    def __init__(self, new: str):
        self.new = new

    def create_module(self, spec) -> ModuleType:
        return importlib.import_module(self.new)

    def exec_module(self, module: ModuleType) -> None:
        pass

    def load_module(self, fullname: str) -> ModuleType:
        return importlib.import_module(self.new)


