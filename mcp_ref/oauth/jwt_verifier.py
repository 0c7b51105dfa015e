"""JWT access tokens verified against the authorization server's JWK Set: a :class:`TokenVerifier`.

Needs the ``auth`` extra (``pip install 'mcp-ref[auth]'``: PyJWT with ``cryptography``).  PyJWT
is imported when a :class:`JwtVerifier` is constructed, never by ``import mcp_ref`` nor by
``import mcp_ref.oauth.resource``.

A token is accepted only when all of these hold (each check is named beside its code below):

- it is a compact JWS no longer than ``MAX_TOKEN_LENGTH``, without a ``crit`` header
  (RFC 7515 §4.1.11: this verifier understands no extension);
- its ``alg`` is one of the verifier's ``algorithms``, which are asymmetric only: ``none`` and
  the HMAC algorithms are refused when the verifier is built, so a token cannot pick them
  (RFC 8725 §2.1, §3.1);
- its ``typ`` is ``at+jwt`` (RFC 9068 §2.1, §4), or, unless ``require_at_jwt=True``, absent or
  the generic ``JWT``: RFC 9068 §4 refuses those too, but many authorization servers still issue
  them (an ID token's or a logout token's explicit type is refused either way);
- the key named by its ``kid`` is in the JWK Set, is a signing key (``use``/``key_ops``,
  RFC 7517 §4.2, §4.3), and is of the family of that ``alg`` (an RSA key for RS*/PS*, a P-256 key
  for ES256, ...; the key's own ``alg`` if it has one): one key, one algorithm (RFC 8725 §3.1);
  and the signature verifies with it;
- ``iss`` is the configured issuer exactly (RFC 9068 §4: it "MUST exactly match");
- ``aud`` names this resource's canonical URI (RFC 8707; MCP 2025-06-18 and 2025-11-25
  basic/authorization §Token Audience Binding and Validation; RFC 9068 §4);
- ``exp`` is present and in the future, ``nbf`` and ``iat`` (if present) are not in the future,
  each within ``leeway`` seconds (RFC 7519 §4.1.4, §4.1.5, §4.1.6; RFC 9068 §4);
- a client id is there (``client_id``, RFC 9068 §2.2 / RFC 8693 §4.3, else ``azp``).

Scopes come from ``scope`` (a space-separated string, RFC 9068 §2.2.3 / RFC 8693 §4.2) or
``scp`` (a list, or a string), the subject from ``sub``.  Anything else is refused: ``verify``
answers None and logs why at debug level, never with the token.

The JWK Set is a dict given once (no fetching: tests, offline use) or a URL, fetched with
``requests``:

- https only (RFC 8414 §2: the ``jwks_uri`` "MUST use the https scheme"), except http on a
  loopback address; no redirects; at most ``max_bytes`` bytes and ``max_keys`` keys; ``timeout``
  bounds the whole exchange, from connecting to the last byte (its status line and headers too,
  however slowly they are trickled: :func:`~mcp_ref.http.bounded_reads.exchange_within`);
- cached for the ``max-age`` of its ``Cache-Control`` held within ``[min_ttl, max_ttl]``
  (``no-store``/``no-cache``: ``min_ttl``; none: ``DEFAULT_TTL`` within the same bounds); one
  set at a time, replaced whole (that is the cache's bound);
- refetched when it is stale, or when a token names a key it does not hold (rotation), but never
  more than once per ``refetch_interval`` seconds, whoever asks: a flood of tokens with unknown
  ``kid`` values costs at most one fetch per interval;
- when a refetch fails, the last good set is kept for at most ``max_ttl`` seconds past its
  expiry, then dropped (every token is refused until a fetch succeeds).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeGuard, cast
from urllib.parse import urlsplit

from ..http.not_reached import shown
from ..http.origins import is_loopback, redirects_unread
from .discovery import cache_lifetime
from .resource import AccessInfo, canonical

log = logging.getLogger(__name__)

#: Every algorithm the verifier can be configured with, by key family (RFC 7518 §3.1, RFC 8037 §3.1).
#: HMAC (``HS*``) and ``none`` are absent on purpose (RFC 8725 §2.1): a verifier holding only
#: public keys must never treat one as a shared secret.
ALGORITHM_FAMILIES = {
    "RS256": ("RSA", None),
    "RS384": ("RSA", None),
    "RS512": ("RSA", None),
    "PS256": ("RSA", None),
    "PS384": ("RSA", None),
    "PS512": ("RSA", None),
    "ES256": ("EC", "P-256"),
    "ES384": ("EC", "P-384"),
    "ES512": ("EC", "P-521"),
    "EdDSA": ("OKP", None),
}
#: The algorithms accepted unless the verifier is told otherwise: asymmetric signatures only (all
#: of the above).
DEFAULT_ALGORITHMS = tuple(ALGORITHM_FAMILIES)
#: Curves of OKP keys usable with EdDSA (RFC 8037 §3.1).
EDDSA_CURVES = ("Ed25519", "Ed448")
#: RFC 7518 §3.3: "A key of size 2048 bits or larger MUST be used" with RS*/PS*; smaller keys are skipped.
MIN_RSA_BITS = 2048
#: A bearer token longer than this (characters) is refused before it is parsed.
MAX_TOKEN_LENGTH = 32 * 1024
#: A fetched JWK Set larger than this (bytes) is refused and not read further.
MAX_JWKS_BYTES = 64 * 1024
#: A JWK Set with more keys than this is refused.
MAX_JWKS_KEYS = 64
#: Seconds a JWK Set without ``Cache-Control`` is kept (held within ``[min_ttl, max_ttl]``).
DEFAULT_TTL = 300.0
#: JWK private-key members (RFC 7518 §6.2.2, §6.3.2; RFC 8037 §2): a published set never holds them.
PRIVATE_MEMBERS = ("d", "p", "q", "dp", "dq", "qi", "oth", "k")


class JwksError(ValueError):
    """The JWK Set could not be had or used: not fetched, too big, not a JWK Set, no usable key
    (a ValueError: a JWK Set given as a dict with no usable key is a bad configuration)."""


class _Refused(Exception):
    """A token is refused; the message is the reason, to log (never the token)."""


@dataclass(frozen=True)
class _Key:
    kid: str | None
    algorithms: frozenset[str]
    key: Any  # a cryptography public key object


@dataclass(frozen=True)
class _KeySet:
    generation: int
    keys: tuple[_Key, ...]
    expires_at: float  # on the verifier's clock; refetch after this
    usable_until: float  # drop the keys after this, if no refetch succeeded


class JwtVerifier:
    """A :class:`~mcp_ref.oauth.resource.TokenVerifier` for JWT access tokens (see the module docstring).

    ``jwks``: the JWK Set's URL (``https://as.example.com/.well-known/jwks.json``), or a JWK Set
    as a dict (``{"keys": [...]}``), used as is and never fetched.  ``issuer``: the ``iss`` a token
    must carry, exactly.  ``audience``: this resource's canonical URI (or several), one of which
    the token's ``aud`` must name.  ``algorithms``: the ``alg`` values accepted (asymmetric only;
    anything else raises ValueError).  ``leeway``: seconds of clock skew allowed on ``exp``,
    ``nbf`` and ``iat`` (0 to 300).  ``timeout``: seconds for the whole of one JWK Set fetch
    (connecting, status line, headers and body).  ``refetch_interval``, ``min_ttl``, ``max_ttl``,
    ``max_bytes``, ``max_keys``: the cache and fetch bounds of the module docstring.
    ``require_at_jwt``: refuse a token whose ``typ`` is not ``at+jwt`` (RFC 9068 §4).
    ``scope_claims`` and ``client_id_claims``: the claims read, first present wins.  ``clock``:
    the monotonic clock the cache's times are read from (tests pass their own).

    Raises ``ImportError`` naming the ``auth`` extra when PyJWT is missing, and ``ValueError`` for
    a bad configuration (or a JWK Set dict with no usable key).
    """

    def __init__(
        self,
        jwks: str | dict,
        *,
        issuer: str,
        audience: str | Iterable[str],
        algorithms: Iterable[str] = DEFAULT_ALGORITHMS,
        leeway: float = 30.0,
        timeout: float = 5.0,
        require_at_jwt: bool = False,
        scope_claims: Iterable[str] = ("scope", "scp"),
        client_id_claims: Iterable[str] = ("client_id", "azp"),
        refetch_interval: float = 30.0,
        min_ttl: float = 60.0,
        max_ttl: float = 3600.0,
        max_bytes: int = MAX_JWKS_BYTES,
        max_keys: int = MAX_JWKS_KEYS,
        clock: Callable[[], float] = time.monotonic,
    ):
        try:
            import jwt
        except ImportError as exc:
            raise ImportError(
                "JwtVerifier needs PyJWT with cryptography (the auth extra): pip install 'PyJWT[crypto]'"
            ) from exc
        self._jwt = jwt
        if not isinstance(issuer, str) or not issuer:
            raise ValueError("issuer must be a non-empty string")
        #: The ``iss`` every token must carry, compared exactly.
        self.issuer = issuer
        audiences = [audience] if isinstance(audience, str) else list(audience)
        if not audiences or not all(isinstance(a, str) and a for a in audiences):
            raise ValueError("audience must be this resource's canonical URI (or a list of them)")
        #: The canonical forms of the audiences accepted (one must be in a token's ``aud``).
        self.audiences = tuple(canonical(a) for a in audiences)
        self.algorithms = tuple(algorithms)
        refused = [alg for alg in self.algorithms if alg not in ALGORITHM_FAMILIES]
        if refused or not self.algorithms:
            # RFC 8725 §2.1 / §3.1: "none", and an HMAC algorithm keyed with a public key, are how
            # tokens get forged; only asymmetric algorithms are accepted here.
            raise ValueError(
                f"JwtVerifier accepts asymmetric algorithms only ({', '.join(ALGORITHM_FAMILIES)}); "
                f"refused: {', '.join(map(str, refused)) or 'an empty list'}"
            )
        if not 0 <= leeway <= 300:
            raise ValueError("leeway must be between 0 and 300 seconds")
        if not (
            timeout > 0
            and refetch_interval >= 0
            and 0 < min_ttl <= max_ttl
            and max_bytes > 0
            and max_keys > 0
        ):
            raise ValueError(
                "timeout, refetch_interval, min_ttl <= max_ttl, max_bytes and max_keys must be positive"
            )
        self.leeway = float(leeway)
        self.timeout = float(timeout)
        self.require_at_jwt = require_at_jwt
        self.scope_claims = tuple(scope_claims)
        self.client_id_claims = tuple(client_id_claims)
        self.refetch_interval = float(refetch_interval)
        self.min_ttl = float(min_ttl)
        self.max_ttl = float(max_ttl)
        self.max_bytes = int(max_bytes)
        self.max_keys = int(max_keys)
        self._clock = clock
        self._fetch_lock = threading.Lock()
        self._attempted_at: float | None = None
        if isinstance(jwks, dict):
            #: The JWK Set's URL; None for a static set.
            self.jwks_url = None
            self._state = _KeySet(1, self._parse(jwks), float("inf"), float("inf"))
        elif isinstance(jwks, str):
            parts = urlsplit(jwks)
            # RFC 8414 §2: jwks_uri "MUST use the https scheme"; http is allowed on loopback only.
            if (
                not (
                    parts.scheme == "https"
                    or (parts.scheme == "http" and is_loopback(parts.hostname))
                )
                or not parts.netloc
            ):
                raise ValueError("the JWK Set URL must be https (http only on a loopback address)")
            self.jwks_url = jwks
            self._state = _KeySet(0, (), float("-inf"), float("-inf"))
        else:
            raise TypeError("jwks must be a JWK Set URL (str) or a JWK Set (dict)")

    # -- verification ---------------------------------------------------------------------------

    def verify(self, token: str) -> AccessInfo | None:
        """The :class:`AccessInfo` the token vouches for, or None (the reason logged at debug level)."""
        try:
            return self._verify(token)
        except _Refused as refused:
            log.debug("JWT access token refused: %s", refused)
            return None
        except Exception as exc:  # fail closed; the message could quote the token, so only its type
            log.warning(
                "JWT access token refused: verification failed unexpectedly (%s)",
                type(exc).__name__,
            )
            return None

    def _verify(self, token: str) -> AccessInfo:
        jwt = self._jwt
        if not isinstance(token, str) or len(token) > MAX_TOKEN_LENGTH or token.count(".") != 2:
            raise _Refused(f"not a compact JWS of at most {MAX_TOKEN_LENGTH} characters")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise _Refused(f"malformed header ({type(exc).__name__})") from None
        alg = header.get("alg")
        if alg not in self.algorithms:
            # RFC 8725 §3.1: the algorithm is checked against the verifier's list, never taken
            # from the token; "none" and HS* are never on that list.
            raise _Refused(f"alg {_short(alg)} is not one of {', '.join(self.algorithms)}")
        if "crit" in header:
            raise _Refused(
                "a crit header names extensions this verifier does not understand (RFC 7515 §4.1.11)"
            )
        self._check_type(header.get("typ"))
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise _Refused("kid is not a string (RFC 7515 §4.1.4)")
        key = self._key_for(kid, alg)
        if key is None:
            raise _Refused(f"no signing key for kid {_short(kid)} and alg {alg} in the JWK Set")
        try:
            claims = jwt.decode(
                token,
                key.key,
                algorithms=[alg],
                issuer=self.issuer,
                leeway=self.leeway,
                options={
                    "require": ["exp", "iss", "aud"],
                    "verify_aud": False,
                    "verify_signature": True,
                    "verify_exp": True,
                    "verify_nbf": True,
                    "verify_iat": True,
                    "verify_iss": True,
                },
            )
        except jwt.ExpiredSignatureError:
            raise _Refused("expired (exp)") from None
        except jwt.ImmatureSignatureError:
            raise _Refused("not yet valid (nbf or iat)") from None
        except jwt.InvalidIssuerError:
            raise _Refused("issued by another issuer (iss)") from None
        except jwt.MissingRequiredClaimError as exc:
            raise _Refused(f"the {exc.claim} claim is missing") from None
        except jwt.InvalidSignatureError:
            raise _Refused("the signature does not verify") from None
        except jwt.PyJWTError as exc:
            raise _Refused(f"not valid ({type(exc).__name__})") from None
        return self._access_info(claims)

    def _check_type(self, typ) -> None:
        """RFC 9068 §4: "at+jwt" (RFC 7515 §4.1.9: "application/" may be omitted; case-insensitive)."""
        kind = typ.lower().removeprefix("application/") if isinstance(typ, str) else typ
        if kind == "at+jwt":
            return
        if self.require_at_jwt:
            raise _Refused(f"typ {_short(typ)} is not at+jwt (RFC 9068 §4)")
        if typ is not None and kind != "jwt":
            # Another explicit type (an ID token's, a logout token's ...) is not an access token.
            raise _Refused(f"typ {_short(typ)} is not an access token's")

    def _access_info(self, claims: dict[str, Any]) -> AccessInfo:
        now = time.time()
        exp = claims.get("exp")
        if not _is_number(exp):
            raise _Refused("exp is not a number")
        for name in ("nbf", "iat"):  # RFC 7519 §4.1.5, §4.1.6
            value = claims.get(name)
            if value is not None and (not _is_number(value) or value > now + self.leeway):
                raise _Refused(f"{name} is not a number or is in the future")
        if claims.get("iss") != self.issuer:  # RFC 9068 §4: "MUST exactly match"
            raise _Refused("issued by another issuer (iss)")
        audience = claims.get("aud")
        audience = [audience] if isinstance(audience, str) else audience
        if (
            not isinstance(audience, list)
            or not audience
            or not all(isinstance(a, str) for a in audience)
        ):
            raise _Refused("aud is not a string or a list of strings")
        # RFC 8707, MCP basic/authorization §Token Audience Binding and Validation, RFC 9068 §4:
        # the token must have been issued for this resource.
        if not any(_canonical_or_none(a) in self.audiences for a in audience):
            raise _Refused("issued for another audience (aud)")
        client_id = next(
            (claims[name] for name in self.client_id_claims if claims.get(name) is not None), None
        )
        if not isinstance(client_id, str) or not client_id:
            raise _Refused(f"no client id ({' or '.join(self.client_id_claims)})")
        subject = claims.get("sub")
        if subject is not None and not isinstance(subject, str):
            raise _Refused("sub is not a string")
        return AccessInfo(
            client_id=client_id,
            subject=subject,
            scopes=self._scopes(claims),
            expires_at=float(exp),
            audience=tuple(a for a in audience if _canonical_or_none(a) is not None),
            claims=claims,
        )

    def _scopes(self, claims: dict[str, Any]) -> tuple[str, ...]:
        """``scope``: space-separated (RFC 9068 §2.2.3); ``scp``: a list of strings, or a string."""
        for name in self.scope_claims:
            value = claims.get(name)
            if value is None:
                continue
            if isinstance(value, str):
                return tuple(value.split())
            if isinstance(value, list) and all(isinstance(s, str) for s in value):
                return tuple(s for item in value for s in item.split())
            raise _Refused(f"the {name} claim is neither a string nor a list of strings")
        return ()

    # -- the JWK Set ----------------------------------------------------------------------------

    def _key_for(self, kid: str | None, alg: str) -> _Key | None:
        """The key for ``kid`` and ``alg``; one (rate-limited) refetch if the set is stale or lacks it."""
        state = self._state
        stale = self._clock() >= state.expires_at  # never for a static set (expires_at is inf)
        if stale:
            self._refresh(state.generation)
            state = self._state
        key = _match(self._usable(state), kid, alg)
        if key is None and self.jwks_url is not None and not stale:
            # Maybe a rotation (RFC 7517 §5 sets change): refetch, at most once per refetch_interval.
            self._refresh(state.generation)
            if self._state.generation != state.generation:
                key = _match(self._usable(self._state), kid, alg)
        return key

    def _usable(self, state: _KeySet) -> tuple[_Key, ...]:
        return state.keys if self._clock() < state.usable_until else ()

    def _refresh(self, seen_generation: int) -> None:
        """Fetch the JWK Set, unless another thread just did or the last attempt is too recent."""
        # a fetch takes at most about 2 x timeout
        if not self._fetch_lock.acquire(timeout=2 * self.timeout + 1.0):
            log.warning("gave up waiting for another thread's JWK Set fetch")
            return
        try:
            if self._state.generation != seen_generation:
                return  # fetched by another thread while this one waited
            now = self._clock()
            if self._attempted_at is not None and now - self._attempted_at < self.refetch_interval:
                return
            self._attempted_at = now
            try:
                keys, ttl = self._fetch()
            except JwksError as exc:
                # (only a verifier with a URL fetches; never its userinfo or query in a log)
                url = shown(cast(str, self.jwks_url))
                log.warning("JWK Set %s not refreshed: %s", url, exc)
                return
            self._state = _KeySet(
                self._state.generation + 1, keys, now + ttl, now + ttl + self.max_ttl
            )
        finally:
            self._fetch_lock.release()

    def _fetch(self) -> tuple[tuple, float]:
        """GET the JWK Set: (its keys, seconds to keep them).  Raises JwksError."""
        import requests

        from ..http.bounded_reads import exchange_within, read_within
        from ..http.framing import framing_session

        # the whole exchange within timeout, however slowly the server trickles its status line,
        # headers or body: a refetch holds every other token check waiting on a key (_refresh)
        try:  # (only a set with a URL is refreshed: _key_for)
            with (
                exchange_within(self.timeout),
                framing_session() as http,
                http.get(
                    cast(str, self.jwks_url),
                    timeout=self.timeout,
                    allow_redirects=False,
                    stream=True,
                    hooks=redirects_unread(None),  # a redirect's body is never read
                    headers={
                        "Accept": "application/jwk-set+json, application/json",
                        "Accept-Encoding": "identity",
                    },
                ) as answer,
            ):
                if answer.status_code != 200:
                    raise JwksError(f"the JWK Set answered HTTP {answer.status_code}")
                length = answer.headers.get("Content-Length", "")
                if length.isdigit() and int(length) > self.max_bytes:
                    raise JwksError(f"the JWK Set is over {self.max_bytes} bytes")
                data = read_within(answer, self.max_bytes, self.timeout)
                if len(data) > self.max_bytes:
                    raise JwksError(f"the JWK Set is over {self.max_bytes} bytes")
                cache_control = answer.headers.get("Cache-Control", "")
        except requests.exceptions.ReadTimeout:
            raise JwksError(f"the JWK Set took over {self.timeout:g} s") from None
        except requests.RequestException as exc:
            raise JwksError(f"the JWK Set could not be fetched ({type(exc).__name__})") from None
        try:
            document = json.loads(bytes(data))
        except ValueError:
            raise JwksError("the JWK Set is not JSON") from None
        # held within [min_ttl, max_ttl]
        ttl = cache_lifetime(cache_control, DEFAULT_TTL)
        return self._parse(document), min(max(ttl, self.min_ttl), self.max_ttl)

    def _parse(self, document) -> tuple[_Key, ...]:
        """The usable signing keys of a JWK Set (RFC 7517 §5).  Raises JwksError if it has none."""
        entries = document.get("keys") if isinstance(document, dict) else None
        if not isinstance(entries, list):
            raise JwksError("not a JWK Set (RFC 7517 §5: an object with a keys array)")
        if len(entries) > self.max_keys:
            raise JwksError(f"the JWK Set has over {self.max_keys} keys")
        keys = []
        for index, entry in enumerate(entries):
            try:
                keys.append(self._load_key(entry))
            except JwksError as exc:
                log.debug("JWK Set key %d skipped: %s", index, exc)
        if not keys:
            raise JwksError(
                f"the JWK Set has no usable signing key for {', '.join(self.algorithms)}"
            )
        return tuple(keys)

    def _load_key(self, entry) -> _Key:
        if not isinstance(entry, dict):
            raise JwksError("not a JSON object")
        kty = entry.get("kty")
        crv = entry.get("crv")
        declared = entry.get("alg")
        kid = entry.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise JwksError("kid is not a string")
        if any(member in entry for member in PRIVATE_MEMBERS):  # never published; "oct" keys too
            raise JwksError("it holds private or symmetric key material")
        if entry.get("use", "sig") != "sig":  # RFC 7517 §4.2
            raise JwksError("its use is not sig")
        ops = entry.get("key_ops")
        if ops is not None and (not isinstance(ops, list) or "verify" not in ops):  # RFC 7517 §4.3
            raise JwksError("its key_ops do not include verify")
        # RFC 8725 §3.1: each key is used with one algorithm: its "alg" if it declares one, else
        # only the algorithms of its family (and curve).
        usable = [
            alg
            for alg in self.algorithms
            if _fits(alg, kty, crv) and (declared is None or declared == alg)
        ]
        if not usable:
            raise JwksError(
                f"kty {_short(kty)} / alg {_short(declared)} fits none of the algorithms accepted"
            )
        try:
            key = self._jwt.PyJWK(entry, algorithm=usable[0]).key
        except (self._jwt.PyJWTError, ValueError, TypeError, KeyError) as exc:
            raise JwksError(f"not a valid {kty} key ({type(exc).__name__})") from None
        if kty == "RSA" and getattr(key, "key_size", 0) < MIN_RSA_BITS:
            raise JwksError(f"an RSA key under {MIN_RSA_BITS} bits (RFC 7518 §3.3)")
        return _Key(kid, frozenset(usable), key)


def _fits(alg: str, kty, crv) -> bool:
    family, curve = ALGORITHM_FAMILIES[alg]
    if kty != family:
        return False
    if family == "EC":
        return crv == curve
    if family == "OKP":
        return crv in EDDSA_CURVES
    return True


def _match(keys: tuple[_Key, ...], kid: str | None, alg: str) -> _Key | None:
    """The key named ``kid`` that may verify ``alg``; without a kid, the only such key, if there is one."""
    fitting = [key for key in keys if alg in key.algorithms]
    if kid is not None:
        return next((key for key in fitting if key.kid == kid), None)
    return fitting[0] if len(fitting) == 1 else None


def _canonical_or_none(uri: str) -> str | None:
    try:
        return canonical(uri)
    except ValueError:
        return None


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _short(value) -> str:
    """A header value fit for a log line: repr'd (no line breaks), at most 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
