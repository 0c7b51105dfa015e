"""How an MCP client finds out where and how to authorize (the client side of discovery).

1. The server's 401 carries a ``WWW-Authenticate`` challenge (RFC 6750 §3, RFC 9728 §5.1):
   :func:`parse_challenges` reads it.
2. Its ``resource_metadata`` URL, else the well-known URIs (path-based, then root), give the
   protected resource metadata (RFC 9728): :func:`discover_resource`.
   2025-11-25 basic/authorization §Protected Resource Metadata Discovery Requirements: clients
   "MUST ... use the resource metadata URL from the parsed WWW-Authenticate headers when present;
   otherwise, they MUST fall back to constructing and requesting the well-known URIs in the order
   listed above".
3. Its first authorization server's metadata (RFC 8414; OpenID Connect Discovery), tried at the
   well-known URIs in the order of §Authorization Server Metadata Discovery:
   :func:`discover_authorization_server`.
4. A server of the 2025-03-26 era publishes no resource metadata: the authorization server is the
   MCP server's origin, and without metadata the default endpoints ``/authorize``, ``/token`` and
   ``/register`` apply (2025-03-26 basic/authorization §2.3.3 Fallbacks): :func:`legacy_authorization_server`.

Every fetch is bounded: :data:`MAX_METADATA_BYTES`, and the caller's timeout over the whole
exchange, status line and headers included (however slowly a peer trickles them), through
``OAuth``'s own session (:func:`fetch_json`).

Every URL read from a peer (the challenge's ``resource_metadata``, the metadata's ``resource``,
``authorization_servers`` and endpoints) is checked by :func:`check_url` before it is fetched,
posted to or handed to a browser: ``https``, or ``http`` on a loopback host only (2025-11-25
basic/authorization §Communication Security: "All authorization server endpoints MUST be served
over HTTPS"); no user credentials, no fragment; a loopback target only when the party naming it
is itself on loopback.  A ``javascript:``, ``file:`` or ``data:`` endpoint (the class of
CVE-2025-6514) is refused with a :class:`~mcp_ref.oauth.errors.MetadataError` before any connection.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

from ..http.not_reached import shown
from ..http.origins import (
    is_loopback,
    names_this_machine,
    origin_text,
    redirects_unread,
    same_origin,
)
from .errors import MetadataError, PkceUnsupported
from .resource import canonical

log = logging.getLogger(__name__)

#: A metadata document larger than this is refused (real ones are a few KiB).
MAX_METADATA_BYTES = 256 * 1024
#: A token endpoint's answer larger than this is refused (the MCP server's authorization server's,
#: and the identity provider's in an ID-JAG exchange).
MAX_TOKEN_RESPONSE_BYTES = 64 * 1024
#: A URL from metadata longer than this is refused.
MAX_URL_LENGTH = 8192
#: Characters no URL from metadata may hold: whitespace, controls, and the backslash (which browsers
#: read as "/" but urllib does not, so the two would disagree about the host).
_BAD_URL_CHARS = re.compile(r"[\x00-\x20\x7f-\x9f\\\u2028\u2029]")

_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_PARAM = re.compile(rf'\s*({_TOKEN})\s*=\s*("(?:[^"\\]|\\.)*"|{_TOKEN}=*)\s*(?:,|$)')
_SCHEME = re.compile(rf"\s*,?\s*({_TOKEN})(?:\s+|$)")


@dataclass
class Challenge:
    """One ``WWW-Authenticate`` challenge: its scheme (lowercase) and parameters (names lowercase)."""

    scheme: str
    params: dict[str, str] = field(default_factory=dict)

    @property
    def scope(self) -> list[str] | None:
        """The scopes the server asks for (RFC 6750 §3), or None when it names none."""
        scope = self.params.get("scope")
        return scope.split() if scope else None

    @property
    def error(self) -> str | None:
        """``invalid_token``, ``insufficient_scope``, ``use_dpop_nonce`` ... or None."""
        return self.params.get("error")

    @property
    def resource_metadata(self) -> str | None:
        """RFC 9728 §5.1: where the protected resource metadata is."""
        return self.params.get("resource_metadata")


def parse_challenges(header: str | None) -> list[Challenge]:
    """Every challenge in a ``WWW-Authenticate`` value (RFC 9110 §11.6.1), leniently: a malformed
    part ends the parse, and what was read so far is kept."""
    challenges: list[Challenge] = []
    text = header or ""
    position = 0
    while position < len(text):
        scheme = _SCHEME.match(text, position)
        if not scheme:
            break
        challenge = Challenge(scheme.group(1).lower())
        challenges.append(challenge)
        position = scheme.end()
        while position < len(text):
            param = _PARAM.match(text, position)
            if not param:
                break
            value = param.group(2)
            if value.startswith('"'):
                value = re.sub(r"\\(.)", r"\1", value[1:-1])
            challenge.params.setdefault(param.group(1).lower(), value)
            position = param.end()
    return challenges


def bearer_challenge(header: str | None) -> Challenge:
    """The Bearer (or DPoP) challenge of a ``WWW-Authenticate`` value; an empty one if there is none."""
    challenges = parse_challenges(header)
    for scheme in ("bearer", "dpop"):
        for challenge in challenges:
            if challenge.scheme == scheme:
                return challenge
    return Challenge("bearer")


@dataclass
class ResourceMetadata:
    """RFC 9728 protected resource metadata: ``resource``, its ``authorization_servers``, ``scopes_supported``."""

    resource: str
    authorization_servers: list[str]
    scopes_supported: list[str] | None = None
    url: str = ""  # where it was found
    raw: dict[str, Any] = field(default_factory=dict)


@dataclass
class ServerMetadata:
    """RFC 8414 authorization server metadata (or OpenID provider metadata), as found at ``url``.

    ``legacy`` marks the 2025-03-26 defaults used when a server publishes none.
    """

    issuer: str
    authorization_endpoint: str | None
    token_endpoint: str
    registration_endpoint: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    url: str = ""
    legacy: bool = False

    def supports(self, name: str, value: str, default: tuple[str, ...] = ()) -> bool:
        """True when the list ``name`` of the metadata holds ``value`` (``default`` when it is absent)."""
        values = self.raw.get(name)
        return value in (values if isinstance(values, list) else default)

    def require_pkce(self) -> None:
        """2025-11-25 §Authorization Code Protection: "If code_challenge_methods_supported is absent,
        the authorization server does not support PKCE and MCP clients MUST refuse to proceed"."""
        if self.legacy:
            return  # 2025-03-26: no metadata, so nothing to check; PKCE is used all the same
        if not self.supports("code_challenge_methods_supported", "S256"):
            raise PkceUnsupported(
                f"the authorization server {self.issuer} does not advertise PKCE with S256 "
                "(code_challenge_methods_supported); refusing to authorize with it"
            )


class _NotHere(MetadataError):
    """No metadata document at a well-known URL, though it answered: a redirect (not followed), a
    body larger than :data:`MAX_METADATA_BYTES`, not JSON, not a JSON object, or a document for
    another issuer or resource (RFC 8414 §3.3, RFC 9728 §3.3: "MUST NOT" be used).  Discovery
    tries the next URL (2025-11-25 basic/authorization §Authorization Server Metadata Discovery:
    clients "MUST attempt multiple well-known endpoints"), and says why each failed at the end."""


def fetch_json(
    http, url: str, *, timeout: float, headers: dict[str, str] | None = None
) -> tuple[int, object]:
    """GET ``url``: (status, the JSON body, or None for an error status).  Bounded by ``timeout``
    in all, connecting, status line, headers and body (:func:`~mcp_ref.http.bounded_reads.exchange_within`:
    through a session of :func:`~mcp_ref.http.framing.framing_adapter`, as ``OAuth``'s own; with
    another, each read and the body in all: :func:`bounded_body`) and :data:`MAX_METADATA_BYTES`;
    :class:`MetadataError` when it cannot be reached, or answers a redirect, a larger body or one
    that is not JSON."""
    import requests

    from ..http.bounded_reads import exchange_within

    try:
        with exchange_within(timeout):
            response = http.get(
                url,
                headers={"Accept": "application/json", **(headers or {})},
                timeout=timeout,
                stream=True,
                allow_redirects=False,
                hooks=redirects_unread(http),  # a redirect's body is never read (not even whole)
            )
            with response:
                if response.is_redirect:
                    # Not followed (its target would be fetched unchecked): said as such, not as "not JSON".
                    raise _NotHere(
                        f"{shown(url)} answered HTTP {response.status_code}, a redirect to "
                        f"{origin_text(urljoin(url, response.headers.get('Location', '')))}; metadata "
                        "is fetched from the URL the spec gives, redirects are not followed"
                    )
                if not response.ok:
                    return response.status_code, None
                body = bounded_body(response, MAX_METADATA_BYTES, timeout)
    except requests.RequestException as exc:
        raise MetadataError(f"cannot fetch {shown(url)}: {type(exc).__name__}") from None
    if len(body) > MAX_METADATA_BYTES:
        raise _NotHere(f"{shown(url)} answered more than {MAX_METADATA_BYTES} bytes of metadata")
    try:
        return response.status_code, json.loads(body)
    except ValueError:
        raise _NotHere(
            f"{shown(url)} did not answer JSON metadata "
            f"(Content-Type {response.headers.get('Content-Type', 'none')!r})"
        ) from None


def bounded_body(response, limit: int, timeout: float) -> bytes:
    """At most ``limit`` + 1 bytes of a streamed response's body (more tells the caller it is too
    large), read within ``timeout`` seconds in all (:func:`~mcp_ref.http.bounded_reads.read_within`:
    ``requests.exceptions.ReadTimeout`` past that, however slowly a peer trickles it); kept as
    the response's content, so a hook that reads it again (``--trace``) gets the same."""
    if response._content is False:  # not read yet (requests' marker)
        from ..http.bounded_reads import read_within

        response._content = read_within(response, limit, timeout)
        response._content_consumed = True
        if len(response._content) > limit:
            # The rest stays unread: the connection is closed, never back in the pool, where the
            # next request to that origin would read the rest as its own answer.
            response.raw.close()
    return response._content[: limit + 1]


def bounded_json(response, limit: int, timeout: float) -> dict | None:
    """The JSON object of a streamed response's body, read within ``limit`` bytes and ``timeout``
    seconds (:func:`bounded_body`; the response is closed after); None when the body is larger,
    or not a JSON object."""
    with response:
        body = bounded_body(response, limit, timeout)
    try:
        answer = json.loads(body) if len(body) <= limit else None
    except ValueError:  # json.JSONDecodeError too
        return None
    return answer if isinstance(answer, dict) else None


def cache_lifetime(cache_control: str, default: float) -> float:
    """Seconds a fetched document may be kept, by its ``Cache-Control``: 0 when it says
    ``no-store`` or ``no-cache`` anywhere (RFC 9111 §5.2.2.3, §5.2.2.5: it must not be reused
    without checking), else its ``max-age`` (§5.2.2.1), else ``default``."""
    directives: dict[str, str] = {}
    for directive in cache_control.lower().split(","):
        name, _, value = directive.strip().partition("=")
        directives.setdefault(name, value.strip().strip('"'))
    if "no-store" in directives or "no-cache" in directives:
        return 0.0
    max_age = directives.get("max-age", "")
    return float(max_age) if max_age.isdigit() else default


def _shown(url: object) -> str:
    """A URL from a peer, fit for a one-line message (quoted, at most 120 characters)."""
    text = repr(url)
    return text if len(text) <= 120 else text[:117] + "..."


def check_url(url: object, what: str, *, referrer: str | None = None, query: bool = True) -> str:
    """``url`` (taken from a peer: ``what`` says which field of which document), if it is safe to
    fetch, post to or open in a browser; else raise :class:`MetadataError`, before any connection.

    - the scheme is ``https``, or ``http`` with a loopback host (``localhost``, 127.0.0.0/8,
      ``::1``): 2025-11-25 basic/authorization §Communication Security, "All authorization server
      endpoints MUST be served over HTTPS" (2026-07-28 security-considerations, the same);
    - a host; no user credentials; no fragment (RFC 6749 §3.1, §3.2: "The endpoint URI MUST NOT
      include a fragment component"; RFC 9728 §2 and RFC 8707 §2 for a resource); no query when
      ``query`` is False (RFC 8414 §2: an issuer "has no query or fragment components");
    - no whitespace, control character or backslash, at most :data:`MAX_URL_LENGTH` characters;
    - no percent-encoding in the host (urllib3 and browsers decode it, urllib does not);
    - ``referrer`` is the URL of the party that named it (the MCP server, the issuer): a URL on
      its origin passes the scheme rule (that origin was named by the user, or checked already),
      and a loopback host is accepted only when the referrer is on loopback too (a remote server
      must not point this client, or the user's browser, at services on this machine): in any
      spelling of this machine (``127.1``, ``0x7f.0.0.1``, ``2130706433``, ``0.0.0.0``,
      ``[::ffff:127.0.0.1]``, ``localhost.``, ``x.localhost``: :func:`~mcp_ref.http.origins.names_this_machine`).
    """
    if not isinstance(url, str) or not url:
        raise MetadataError(f"{what} is not a URL: {_shown(url)}")
    if len(url) > MAX_URL_LENGTH or _BAD_URL_CHARS.search(url):
        raise MetadataError(f"{what} is not a well-formed URL: {_shown(url)}")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http") or not parts.hostname:
        raise MetadataError(f"{what} is not an https URL: {_shown(url)}; refused")
    try:
        _ = parts.port  # raises for a port that is not a number in range
    except ValueError:
        raise MetadataError(f"{what} has an invalid port: {_shown(url)}") from None
    if "@" in parts.netloc:
        raise MetadataError(f"{what} has user credentials in it: {_shown(url)}; refused")
    if "%" in parts.netloc:
        # urllib3 and browsers decode a percent-encoded host (``%31%32%37.0.0.1`` is 127.0.0.1)
        # that urllib leaves as written: the checks below would read another host than the one
        # reached.  A host is written plainly (RFC 3986 §3.2.2: an IP literal or a DNS name).
        raise MetadataError(f"{what} has a percent-encoded host: {_shown(url)}; refused")
    if "#" in url:
        raise MetadataError(f"{what} has a fragment: {_shown(url)}; refused")
    if not query and parts.query:
        raise MetadataError(f"{what} has a query: {_shown(url)}; refused (RFC 8414 §2)")
    if referrer is not None and same_origin(url, referrer):
        return url
    if not url.isascii():
        # A URI is ASCII (RFC 3986 §2); IDNA would map ``１２７.０.０.１`` or ``127。0。0。1`` to 127.0.0.1
        # after the checks below had read another host, and bidi controls disguise a URL the user sees.
        raise MetadataError(f"{what} is not a well-formed URL (not ASCII): {_shown(url)}; refused")
    loopback = is_loopback(parts.hostname)
    if (
        names_this_machine(parts.hostname)
        and referrer is not None
        and not names_this_machine(urlsplit(referrer).hostname)
    ):
        raise MetadataError(
            f"{what} points at this machine ({_shown(url)}) although {origin_text(referrer)} "
            "is not on it; refused"
        )
    if scheme == "http" and not loopback:
        raise MetadataError(
            f"{what} is plain http on a host that is not loopback: {_shown(url)}; authorization "
            "server endpoints MUST be served over HTTPS (2025-11-25 §Communication Security)"
        )
    return url


def check_issuer(issuer: object, what: str, *, referrer: str | None = None) -> str:
    """An authorization server's issuer identifier, checked as :func:`check_url` does, without a query."""
    return check_url(issuer, what, referrer=referrer, query=False)


def _origin_and_path(url: str) -> tuple[str, str]:
    """``scheme://netloc`` of ``url`` as written, and its path without a trailing slash."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")


def resource_metadata_urls(server_url: str, challenge: Challenge) -> list[str]:
    """Where to look for the protected resource metadata, in the order the spec gives (the
    challenge's ``resource_metadata`` checked by :func:`check_url` first)."""
    origin, path = _origin_and_path(server_url)
    urls = []
    if challenge.resource_metadata:
        urls.append(
            check_url(
                challenge.resource_metadata,
                "the resource_metadata URL of the WWW-Authenticate "
                f"challenge from {origin_text(server_url)}",
                referrer=server_url,
            )
        )
    if path:
        urls.append(f"{origin}/.well-known/oauth-protected-resource{path}")
    urls.append(f"{origin}/.well-known/oauth-protected-resource")
    return list(dict.fromkeys(urls))


def discover_resource(
    http, server_url: str, challenge: Challenge, *, timeout: float
) -> ResourceMetadata | None:
    """The protected resource metadata of ``server_url``; None when every URL answered an error
    status (a 2025-03-26 server).  A URL that holds no metadata for it (:class:`_NotHere`) is
    passed over for the next; when none holds it, :class:`MetadataError` says why for each.

    RFC 9728 §3.3: the ``resource`` in it must be the resource the client asked about, else the
    client "MUST NOT use the metadata"; a resource that is the server URL or one of its parents
    (same origin, a leading path) is accepted, anything else refused.
    """
    failures = []
    for url in resource_metadata_urls(server_url, challenge):
        try:
            status, body = fetch_json(http, url, timeout=timeout)
            if body is None:
                log.debug("no protected resource metadata at %s (HTTP %s)", shown(url), status)
                failures.append((f"{shown(url)} answered HTTP {status}", False))
                continue
            return _resource_metadata(body, url, server_url)
        except _NotHere as exc:
            log.debug("no protected resource metadata here: %s", exc)
            failures.append((str(exc), True))
    if not any(answered for _, answered in failures):
        return None
    raise MetadataError(
        f"no protected resource metadata for {shown(server_url)}: "
        + "; ".join(reason for reason, _ in failures)
    )


def _resource_metadata(body: object, url: str, server_url: str) -> ResourceMetadata:
    """The protected resource metadata ``body`` found at ``url`` for ``server_url``, validated."""
    if not isinstance(body, dict) or not isinstance(body.get("resource"), str):
        raise _NotHere(f"the protected resource metadata at {shown(url)} has no 'resource'")
    check_url(
        body["resource"],
        f"the resource of the protected resource metadata at {shown(url)}",
        referrer=server_url,
    )
    if not covers(body["resource"], server_url):
        raise _NotHere(
            f"the protected resource metadata at {shown(url)} is for {body['resource']}, "
            f"not {shown(server_url)}; refusing it (RFC 9728 §3.3)"
        )
    servers = body.get("authorization_servers")
    if (
        not isinstance(servers, list)
        or not servers
        or not all(isinstance(s, str) and s for s in servers)
    ):
        raise MetadataError(
            f"the protected resource metadata at {shown(url)} names no authorization_servers"
        )
    for server in servers:
        check_issuer(
            server,
            f"an authorization server named by the protected resource metadata at {shown(url)}",
            referrer=server_url,
        )
    scopes = body.get("scopes_supported")
    scopes = [s for s in scopes if isinstance(s, str)] if isinstance(scopes, list) else None
    return ResourceMetadata(body["resource"], servers, scopes, url, body)


def covers(resource: str, server_url: str) -> bool:
    """True when ``resource`` identifies ``server_url``: the same, or a parent on the same origin."""
    mine, theirs = urlsplit(canonical(server_url)), urlsplit(canonical(resource))
    if (mine.scheme, mine.netloc) != (theirs.scheme, theirs.netloc):
        return False
    parent = theirs.path.rstrip("/")
    return mine.path == parent or mine.path.startswith(parent + "/")


def authorization_server_metadata_urls(issuer: str) -> list[str]:
    """2025-11-25 §Authorization Server Metadata Discovery, in its priority order."""
    origin, path = _origin_and_path(issuer)
    if not path:
        return [
            f"{origin}/.well-known/oauth-authorization-server",
            f"{origin}/.well-known/openid-configuration",
        ]
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}/.well-known/openid-configuration{path}",
        f"{origin}{path}/.well-known/openid-configuration",
    ]


def discover_authorization_server(http, issuer: str, *, timeout: float) -> ServerMetadata:
    """The metadata of the authorization server ``issuer``; raises :class:`MetadataError` if none is found
    (or ``issuer`` is not an https URL, :func:`check_issuer`)."""
    check_issuer(issuer, "the authorization server")
    failures = []
    for url in authorization_server_metadata_urls(issuer):
        try:
            status, body = fetch_json(http, url, timeout=timeout)
            if body is None:
                log.debug("no authorization server metadata at %s (HTTP %s)", shown(url), status)
                failures.append(f"{shown(url)} answered HTTP {status}")
                continue
            return server_metadata(body, url, issuer)
        except _NotHere as exc:
            log.debug("no authorization server metadata here: %s", exc)
            failures.append(str(exc))
    raise MetadataError(f"no authorization server metadata for {issuer}: " + "; ".join(failures))


def server_metadata(body: object, url: str, issuer: str) -> ServerMetadata:
    """Validate a metadata document found at ``url`` for ``issuer``.

    2026-07-28 basic/authorization/authorization-server-discovery: "the issuer value in the
    document MUST be identical to the issuer identifier used to construct the well-known URL.
    If they differ, the client MUST NOT use the metadata" (RFC 8414 §3.3).
    """
    if not isinstance(body, dict):
        raise _NotHere(f"the authorization server metadata at {shown(url)} is not a JSON object")
    if body.get("issuer") != issuer:
        raise _NotHere(
            f"the authorization server metadata at {shown(url)} is for issuer {body.get('issuer')!r}, "
            f"not {issuer!r}; refusing it"
        )
    if not isinstance(body.get("token_endpoint"), str) or not body["token_endpoint"]:
        raise MetadataError(
            f"the authorization server metadata at {shown(url)} lacks token_endpoint"
        )
    for name in ("authorization_endpoint", "registration_endpoint"):
        if name in body and not isinstance(body[name], str):
            raise MetadataError(
                f"the authorization server metadata at {shown(url)} has a {name} that is not a URL"
            )
    check_issuer(issuer, f"the issuer of the authorization server metadata at {shown(url)}")
    for name, value in body.items():
        # Every endpoint (RFC 8414 §2 and its registry: *_endpoint, jwks_uri), used here or not.
        if isinstance(value, str) and (name.endswith("_endpoint") or name == "jwks_uri"):
            check_url(
                value,
                f"the {name} of the authorization server metadata at {shown(url)}",
                referrer=issuer,
            )
    return ServerMetadata(
        body["issuer"],
        body.get("authorization_endpoint"),
        body["token_endpoint"],
        body.get("registration_endpoint"),
        body,
        url,
    )


def legacy_authorization_server(
    http, server_url: str, *, timeout: float, protocol_version: str = "2025-03-26"
) -> ServerMetadata:
    """2025-03-26 basic/authorization §2.3: the authorization base URL is the MCP server's origin;
    clients "MUST follow the OAuth 2.0 Authorization Server Metadata protocol" there, and "MUST
    include the header MCP-Protocol-Version"; without metadata (§2.3.3) "clients MUST use the
    following default endpoint paths relative to the authorization base URL": /authorize,
    /token, /register."""
    origin = _origin_and_path(server_url)[0]
    check_issuer(origin, "the authorization server (the MCP server's origin, 2025-03-26 §2.3)")
    url = f"{origin}/.well-known/oauth-authorization-server"
    try:
        status, body = fetch_json(
            http, url, timeout=timeout, headers={"MCP-Protocol-Version": protocol_version}
        )
        if body is not None:
            return server_metadata(body, url, origin)
    except _NotHere as exc:
        raise MetadataError(str(exc)) from None  # the one URL there is
    if status != 404:
        raise MetadataError(
            f"{shown(url)} answered HTTP {status}; cannot discover the authorization server"
        )
    log.debug("no metadata at %s: the 2025-03-26 default endpoints", shown(url))
    return ServerMetadata(
        origin,
        f"{origin}/authorize",
        f"{origin}/token",
        f"{origin}/register",
        {"issuer": origin},
        url,
        legacy=True,
    )
