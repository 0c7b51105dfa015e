"""Issue 21, parts 4 and 5, and issue 33, item 6: one name for one error, and each name in one
module (the package was never published under other paths, so it keeps no aliases for them).

* The OAuth errors live in ``mcp_ref.oauth.errors`` under their root ``AuthorizationError``, which
  the core defines (an HTTP transport catches it) and ``mcp_ref`` exports; the core never loads the
  auth package.
* ``UnsupportedProtocolVersionError`` is the one class of the -32022 condition: the client's "no
  revision in common" and the server's wire error.
* The payload types a ``tools/call`` round trip does not need (``Image``, ``Audio``, sampling and
  elicitation, resources, prompts, completion, roots) live in modules of their own, and so does
  the shaping of payloads for older revisions: importing ``core.types`` or ``core.lifecycle``
  loads none of them.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SERVERS, WAIT

import mcp_ref
from mcp_ref import (
    Client,
    McpError,
    MCPRefError,
    errors as core_errors,
    feature_types,
    lifecycle,
    media,
    sampling_and_elicitation,
    types as core_types,
)
from mcp_ref.errors import UNSUPPORTED_PROTOCOL_VERSION
from mcp_ref.lifecycle import read_envelope, request_meta
from mcp_ref.oauth import errors as auth_errors
from mcp_ref.stdio import SubprocessTransport

OAUTH_ERRORS = [
    "AuthorizationError",
    "MetadataError",
    "PkceUnsupported",
    "RegistrationError",
    "CallbackError",
    "AuthorizationDenied",
    "AuthorizationTimeout",
    "TokenError",
    "InsufficientScope",
    "Unauthorized",
]


def _fresh_python(code: str) -> str:
    """Run ``code`` in a new interpreter (nothing of mcp_ref loaded yet); its stdout."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=WAIT, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


# -- the OAuth errors ----------------------------------------------------------------------------------


def test_the_root_of_the_oauth_errors_is_one_class_under_its_three_names():
    assert (
        mcp_ref.AuthorizationError
        is auth_errors.AuthorizationError
        is core_errors.AuthorizationError
    )


@pytest.mark.parametrize("name", OAUTH_ERRORS[1:])
def test_an_oauth_error_has_one_home(name):
    kind = getattr(auth_errors, name)
    assert kind.__module__ == "mcp_ref.oauth.errors"
    assert issubclass(kind, core_errors.AuthorizationError)
    assert not hasattr(core_errors, name)
    with pytest.raises(ImportError, match=name):
        exec(f"from mcp_ref.errors import {name}", {})


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
    imported += [
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    ]
    assert imported and not [name for name in imported if "auth" in name]


@pytest.mark.parametrize("module", [core_errors, core_types, lifecycle])
def test_a_core_module_answers_only_the_names_it_defines(module):
    """No module ``__getattr__`` hands out names that live elsewhere."""
    assert not hasattr(module, "__getattr__")


# -- one class for the -32022 condition -------------------------------------------------------------


def test_the_version_error_has_one_name():
    assert mcp_ref.UnsupportedProtocolVersionError is core_errors.UnsupportedProtocolVersionError
    assert not hasattr(mcp_ref, "UnsupportedProtocolVersion")
    assert not hasattr(core_errors, "UnsupportedProtocolVersion")
    assert issubclass(mcp_ref.UnsupportedProtocolVersionError, McpError)
    assert mcp_ref.UnsupportedProtocolVersionError.code == UNSUPPORTED_PROTOCOL_VERSION == -32022


def test_a_received_minus_32022_is_the_version_error_with_its_supported_list():
    received = McpError.from_error(
        {
            "code": -32022,
            "message": "Unsupported protocol version",
            "data": {"supported": ["2026-07-28", 7], "requested": "2099-01-01"},
        }
    )
    with pytest.raises(mcp_ref.UnsupportedProtocolVersionError) as caught:
        raise received
    assert caught.value.supported == ["2026-07-28"]  # only the strings


def test_a_server_refuses_an_unknown_version_with_the_one_class():
    with pytest.raises(mcp_ref.UnsupportedProtocolVersionError) as caught:
        read_envelope({"_meta": request_meta("2099-01-01", {})})
    assert caught.value.to_error()["code"] == -32022
    assert caught.value.data["requested"] == "2099-01-01" and "2026-07-28" in caught.value.supported


def test_a_client_refusing_the_servers_version_raises_the_one_class():
    transport = SubprocessTransport(
        [sys.executable, str(SERVERS / "lifecycle_bad_version.py")],
        stderr="capture",
        shutdown_timeout=WAIT,
    )
    with pytest.raises(mcp_ref.UnsupportedProtocolVersionError) as caught:
        Client(transport, timeout=WAIT, era="handshake")
    error = caught.value
    assert isinstance(error, mcp_ref.UnsupportedProtocolVersionError) and isinstance(
        error, McpError
    )
    assert "1999-01-01" in error.message and error.data is None and error.supported == []
    assert (
        transport.returncode == 3
    )  # the client still disconnected (the script exits 3 on end of input)


# -- the rarely used types, in modules of their own ---------------------------------------------------


@pytest.mark.parametrize(
    "name, home",
    [
        ("Image", media),
        ("Audio", media),
        ("media_block", media),
        ("sniff_mime_type", media),
        ("BYTES_RESULT_URI", media),
        ("SamplingMessage", sampling_and_elicitation),
        ("CreateMessageParams", sampling_and_elicitation),
        ("CreateMessageResult", sampling_and_elicitation),
        ("ElicitParams", sampling_and_elicitation),
        ("ElicitResult", sampling_and_elicitation),
        *[(name, feature_types) for name in feature_types.__all__],
    ],
)
def test_a_rarely_used_type_lives_in_its_own_module_only(name, home):
    assert not hasattr(core_types, name)
    if name in mcp_ref.__all__:
        assert getattr(mcp_ref, name) is getattr(home, name)


def test_core_types_and_the_lifecycle_load_none_of_the_modules_of_their_own():
    out = _fresh_python(
        "import sys\n"
        "from mcp_ref import lifecycle, types\n"
        "apart = ('sampling_and_elicitation', 'media', 'feature_types', 'older_revisions')\n"
        "print([f'mcp_ref.{m}' in sys.modules for m in apart])\n"
    )
    assert out == "[False, False, False, False]"


def test_the_older_revision_shaping_has_one_home():
    from mcp_ref import older_revisions

    assert not hasattr(lifecycle, "strip_newer_fields") and not hasattr(
        lifecycle, "content_for_revision"
    )
    block = older_revisions.content_for_revision(
        {"type": "audio", "data": "", "mimeType": "audio/wav"}, "2024-11-05"
    )
    assert block["type"] == "text"
