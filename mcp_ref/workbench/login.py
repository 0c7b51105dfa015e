"""The command's login: ``mcp-ref`` against a protected server (issue 9 §4).

- :func:`command_oauth`: the :class:`~mcp_ref.oauth.client.OAuth` every URL verb uses.  On the first
  401 it prints the authorization URL on stderr, opens it in a browser (unless ``--no-browser``)
  and waits on a loopback listener; the registration and the tokens go to :func:`cache_path`
  (``$XDG_CACHE_HOME/mcp-ref/tokens.json``, mode 0600), so the next call needs no browser.
- :func:`logout`: ``mcp-ref logout URL`` forgets the tokens for that server and the registration
  with its authorization server.
- :func:`traced_http`: with ``--trace``, every HTTP exchange of the flow on stderr (method, URL,
  status, the JSON or form bodies) with every token, code, verifier, secret and assertion, and a
  URL's userinfo, masked (``••••••``) by the inspector's rules (:mod:`mcp_ref.inspector.masking`).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from .terminal import safe


def cache_path() -> Path:
    """``$XDG_CACHE_HOME/mcp-ref/tokens.json`` (``~/.cache/mcp-ref/tokens.json`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mcp-ref" / "tokens.json"


def command_oauth(*, open_browser: bool = True, trace=None, timeout: float = 30.0):
    """The OAuth of the command: a file store at :func:`cache_path`, the loopback browser handler."""
    from ..oauth.browser import LoopbackBrowser
    from ..oauth.client import OAuth
    from ..oauth.store import FileStore

    return OAuth(
        client_name="mcp-ref",
        store=FileStore(cache_path()),
        handler=LoopbackBrowser(open_browser=open_browser),
        http=traced_http(trace) if trace is not None else None,
        timeout=timeout,
    )


def logout(url: str) -> bool:
    """Forget the tokens for ``url`` and the registration with the issuer that minted them; False if none."""
    from ..oauth.resource import canonical
    from ..oauth.store import FileStore, client_key, tokens_key

    store = FileStore(cache_path())
    key = tokens_key(canonical(url.split("?", 1)[0]))
    tokens = store.load(key)
    if tokens is None:
        return False
    store.delete(key)
    if tokens.get("issuer"):
        store.delete(client_key(tokens["issuer"]))
    return True


def _body(data, content_type: str) -> str:
    # the masking module alone (the inspector's package loads nothing else)
    from ..inspector.masking import mask_form, mask_json

    if not data:
        return ""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)
    if "json" in content_type:
        try:
            return json.dumps(mask_json(json.loads(text), oauth=True), ensure_ascii=False)
        except ValueError:
            return "(not JSON)"
    if "x-www-form-urlencoded" in content_type:
        return mask_form(text)
    return f"({len(text)} bytes of {content_type or 'unknown type'})"


def describe(response, timeout: float = 30.0) -> str:
    """One exchange, masked: ``POST URL {body}`` then ``<- STATUS {body}`` (read within
    ``timeout`` seconds in all)."""
    from ..inspector.masking import mask_url

    request = response.request
    sent = _body(request.body, request.headers.get("Content-Type", ""))
    from ..oauth.discovery import MAX_METADATA_BYTES, bounded_body

    try:
        received = _body(
            bounded_body(response, MAX_METADATA_BYTES, timeout),
            response.headers.get("Content-Type", ""),
        )
    except Exception:  # a stream already consumed: say nothing of its body
        received = ""
    location = response.headers.get("Location")
    return (
        f"http> {request.method} {mask_url(request.url)}{' ' + sent if sent else ''}\n"
        f"http< {response.status_code}{' Location: ' + mask_url(location) if location else ''}"
        f"{' ' + received if received else ''}"
    )


def traced_http(stream=None):
    """A ``requests.Session`` that prints each exchange, masked (:func:`describe`), on ``stream``
    (mcp_ref's adapter, :func:`~mcp_ref.http.framing.framing_session`: the OAuth client's bounds hold)."""
    from ..http.framing import framing_session

    session = framing_session()
    out = stream or sys.stderr

    def show(response, timeout=None, **kwargs):
        # the request's read timeout bounds the body the trace reads first, in all
        read_timeout = timeout[1] if isinstance(timeout, tuple) else timeout
        # The peer's words (a Content-Type, a Location) reach the terminal: escape sequences shown,
        # never obeyed (mcp_ref.workbench.terminal); each exchange stays on its two lines.
        print(
            "\n".join(
                safe(line, newline="\\n")
                for line in describe(response, read_timeout or 30.0).split("\n", 1)
            ),
            file=out,
            flush=True,
        )
        return response

    session.hooks["response"].append(show)
    return session
