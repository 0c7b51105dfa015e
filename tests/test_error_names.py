"""Issue 21, parts 4 and 5: one name for one error, and names that moved still import.

* The OAuth errors live in ``mcp_ref.auth.errors`` (under the root ``MCPRefError``); the old
  path ``mcp_ref.core.errors`` and ``mcp_ref.AuthorizationError`` give the same classes, and the
  core loads the auth package only when one of them is asked for.
* ``UnsupportedProtocolVersion`` and ``UnsupportedProtocolVersionError`` are one class (-32022):
  the client's "no revision in common" and the server's wire error are caught by either name.
* The payload types a ``tools/call`` round trip does not need (``Image``, ``Audio``, sampling and
  elicitation, resources, prompts, completion, roots) live in modules of their own, still
  importable from ``mcp_ref.core.types``, which does not load them itself.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SERVERS, WAIT

import mcp_ref
from mcp_ref import Client, McpError, MCPRefError
from mcp_ref.auth import errors as auth_errors
from mcp_ref.core import errors as core_errors, feature_types, media, sampling_and_elicitation, types as core_types
from mcp_ref.core.envelope import read_envelope, request_meta
from mcp_ref.core.errors import UNSUPPORTED_PROTOCOL_VERSION
from mcp_ref.transports.stdio import SubprocessTransport

OAUTH_ERRORS = ["AuthorizationError", "MetadataError", "PkceUnsupported", "RegistrationError", "CallbackError",
                "AuthorizationDenied", "AuthorizationTimeout", "TokenError", "InsufficientScope", "Unauthorized"]


def _fresh_python(code: str) -> str:
    """Run ``code`` in a new interpreter (nothing of mcp_ref loaded yet); its stdout."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=WAIT, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


# -- the OAuth errors, moved to the auth package ---------------------------------------------------


@pytest.mark.parametrize("name", OAUTH_ERRORS)
def test_an_oauth_error_is_the_same_class_under_its_old_path(name):
    moved = getattr(auth_errors, name)
    assert moved.__module__ == "mcp_ref.auth.errors"
    assert getattr(core_errors, name) is moved
    namespace: dict = {}
    exec(f"from mcp_ref.core.errors import {name}", namespace)  # the import statement, not only getattr
    assert namespace[name] is moved
    assert issubclass(moved, auth_errors.AuthorizationError) and issubclass(moved, MCPRefError)


def test_the_package_exports_the_moved_root_of_the_oauth_errors():
    assert mcp_ref.AuthorizationError is auth_errors.AuthorizationError


@pytest.mark.parametrize("name", OAUTH_ERRORS)
def test_except_mcpreferror_catches_every_oauth_error(name):
    kind = getattr(auth_errors, name)
    with pytest.raises(MCPRefError) as caught:
        raise kind("refused")
    assert type(caught.value) is kind and str(caught.value) == "refused"


def test_the_oauth_errors_keep_their_fields_and_second_parents():
    denied = auth_errors.AuthorizationDenied("denied", error="access_denied", description="no")
    assert (denied.error, denied.description) == ("access_denied", "no")
    token = auth_errors.TokenError("bad", error="invalid_grant", status=400)
    assert (token.error, token.status) == ("invalid_grant", 400)
    with pytest.raises(TimeoutError):
        raise auth_errors.AuthorizationTimeout("no redirect")


def test_the_core_has_no_import_statement_of_auth():
    tree = ast.parse(Path(core_errors.__file__).read_text())
    imported = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    imported += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    assert imported and not [name for name in imported if "auth" in name]


def test_the_core_errors_load_the_auth_package_only_when_an_oauth_error_is_asked_for():
    out = _fresh_python(
        "import sys\n"
        "from mcp_ref.core import errors\n"
        "before = any(m.startswith('mcp_ref.auth') for m in sys.modules)\n"
        "errors.TokenError\n"
        "print(before, 'mcp_ref.auth.errors' in sys.modules, 'mcp_ref.auth.oauth' in sys.modules)")
    assert out == "False True False"


def test_an_unknown_name_of_the_core_errors_is_still_an_attribute_error():
    assert not hasattr(core_errors, "NoSuchError")
    with pytest.raises(ImportError, match="NoSuchError"):
        exec("from mcp_ref.core.errors import NoSuchError", {})


# -- one class for the -32022 condition -------------------------------------------------------------


def test_the_two_version_error_names_are_one_class():
    assert core_errors.UnsupportedProtocolVersion is core_errors.UnsupportedProtocolVersionError
    assert mcp_ref.UnsupportedProtocolVersion is mcp_ref.UnsupportedProtocolVersionError
    assert core_errors.UnsupportedProtocolVersionError.__name__ == "UnsupportedProtocolVersionError"
    assert issubclass(mcp_ref.UnsupportedProtocolVersion, McpError)
    assert mcp_ref.UnsupportedProtocolVersion.code == UNSUPPORTED_PROTOCOL_VERSION == -32022


def test_a_received_minus_32022_is_caught_by_the_old_name_with_its_supported_list():
    received = McpError.from_error({"code": -32022, "message": "Unsupported protocol version",
                                    "data": {"supported": ["2026-07-28", 7], "requested": "2099-01-01"}})
    with pytest.raises(mcp_ref.UnsupportedProtocolVersion) as caught:
        raise received
    assert caught.value.supported == ["2026-07-28"]  # only the strings


def test_a_server_refuses_an_unknown_version_with_the_one_class():
    with pytest.raises(mcp_ref.UnsupportedProtocolVersion) as caught:
        read_envelope({"_meta": request_meta("2099-01-01", {})})
    assert caught.value.to_error()["code"] == -32022
    assert caught.value.data["requested"] == "2099-01-01" and "2026-07-28" in caught.value.supported


def test_a_client_refusing_the_servers_version_raises_the_one_class_under_both_names():
    transport = SubprocessTransport([sys.executable, str(SERVERS / "lifecycle_bad_version.py")],
                                    stderr="capture", shutdown_timeout=WAIT)
    with pytest.raises(mcp_ref.UnsupportedProtocolVersionError) as caught:
        Client(transport, timeout=WAIT, era="handshake")
    error = caught.value
    assert isinstance(error, mcp_ref.UnsupportedProtocolVersion) and isinstance(error, McpError)
    assert "1999-01-01" in error.message and error.data is None and error.supported == []
    assert transport.returncode == 3  # the client still disconnected (the script exits 3 on end of input)


# -- the rarely used types, in modules of their own ---------------------------------------------------


@pytest.mark.parametrize("name, home", [
    ("Image", media), ("Audio", media), ("media_block", media), ("sniff_mime_type", media),
    ("BYTES_RESULT_URI", media), ("SamplingMessage", sampling_and_elicitation),
    ("CreateMessageParams", sampling_and_elicitation), ("CreateMessageResult", sampling_and_elicitation),
    ("ElicitParams", sampling_and_elicitation), ("ElicitResult", sampling_and_elicitation),
    *[(name, feature_types) for name in feature_types.__all__],
])
def test_a_moved_type_is_the_same_object_under_core_types_and_the_package(name, home):
    assert getattr(core_types, name) is getattr(home, name)
    if name in mcp_ref.__all__:
        assert getattr(mcp_ref, name) is getattr(home, name)


def test_an_unknown_name_of_core_types_is_still_an_attribute_error():
    assert not hasattr(core_types, "NoSuchType")
    with pytest.raises(ImportError, match="NoSuchType"):
        exec("from mcp_ref.core.types import NoSuchType", {})


def test_core_types_loads_neither_moved_module_until_asked():
    out = _fresh_python(
        "import sys\n"
        "from mcp_ref.core import types\n"
        "moved = ('mcp_ref.core.sampling_and_elicitation', 'mcp_ref.core.media', 'mcp_ref.core.feature_types')\n"
        "print([m in sys.modules for m in moved])\n"
        "from mcp_ref.core.types import ElicitResult\n"
        "print([m in sys.modules for m in moved])")
    assert out.splitlines() == ["[False, False, False]", "[True, False, False]"]


def test_the_older_revision_shaping_is_reached_through_the_lifecycle_and_loaded_on_first_use():
    from mcp_ref.core import lifecycle, older_revisions

    assert lifecycle.strip_newer_fields is older_revisions.strip_newer_fields
    assert lifecycle.content_for_revision is older_revisions.content_for_revision
    assert not hasattr(lifecycle, "no_such_rule")
    out = _fresh_python(
        "import sys\n"
        "from mcp_ref.core import lifecycle\n"
        "print('mcp_ref.core.older_revisions' in sys.modules)\n"
        "block = lifecycle.content_for_revision({'type': 'audio', 'data': '', 'mimeType': 'audio/wav'}, '2024-11-05')\n"
        "print('mcp_ref.core.older_revisions' in sys.modules, block['type'])")
    assert out.splitlines() == ["False", "True text"]
