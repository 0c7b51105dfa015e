"""Opaque, tamper-evident cursors for MCP list methods.

A cursor is ``base64url(b"<position>:<kind>" + HMAC-SHA256(secret, ...)[:16])``
without padding. The position is an offset in the list (``"100"``), or, for the files a file root
lists in ``resources/list``, where in that listing's order the page ends (the last URI sent:
``mcp_ref.server.listing``), so that a page costs its own size, not the whole tree's.  The MAC
stops clients from forging positions, and the kind (``"tools"``, ``"prompts"``, ...) stops a
cursor from one list being replayed against another.

Every process that serves the same clients must share the secret — the workers
of a stateless deployment hand cursors to each other's clients.  Configure it
with ``Server(secret=...)`` or the environment variable ``MCP_REF_SECRET``; a
comma-separated list rotates keys: the first signs, every one is accepted.
Without one, each Paginator draws its own random secret.

The client's side is :func:`follow_cursors`: it follows ``nextCursor`` from page to
page, at most ``max_pages`` of them (``Client(max_pages=)``), and stops at a cursor
the server already gave.
"""

from __future__ import annotations

import binascii
import hashlib
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

from .errors import LimitExceeded, McpError
from .signing import Keyring, b64url, unb64url

__all__ = ["DEFAULT_MAX_PAGES", "InvalidCursor", "Paginator", "SECRET_ENV", "follow_cursors"]

#: The environment variable holding the deployment's secret (``new,old`` during a rotation).
SECRET_ENV = "MCP_REF_SECRET"

_T = TypeVar("_T")
_TAG_BYTES = 16
#: Pages a client follows for one listing before it gives up (``Client(max_pages=)``).
DEFAULT_MAX_PAGES = 1000


class InvalidCursor(ValueError):
    """A cursor that was not issued by this paginator for this list, or is stale."""


class Paginator:
    """Split lists into pages of ``page_size`` items addressed by signed cursors.

    ``secret`` keys the HMAC: bytes, a string, or a sequence of them (a string
    may be ``"new,old"``); the first key signs and every key is accepted, so a
    deployment can rotate without refusing cursors already handed out.  None
    draws a random 32-byte secret: cursors are then valid for this instance
    only (``configured`` tells which).
    """

    __slots__ = ("page_size", "keyring")

    def __init__(
        self,
        page_size: int = 100,
        secret: bytes | str | Sequence[bytes | str] | Keyring | None = None,
    ) -> None:
        """Validate ``page_size`` (an int >= 1) and store the signing keys."""
        if isinstance(page_size, bool) or not isinstance(page_size, int):
            raise TypeError(f"page_size must be an int, not {type(page_size).__name__}")
        if page_size < 1:
            raise ValueError(f"page_size must be >= 1, got {page_size}")
        self.page_size = page_size
        #: The keys that sign cursors (``mcp_ref.signing.Keyring``), shared with the server's other tokens.
        self.keyring = secret if isinstance(secret, Keyring) else Keyring(secret)

    @property
    def configured(self) -> bool:
        """True when the secret was given (shared by a deployment), False when drawn at random."""
        return self.keyring.configured

    def make_cursor(self, offset: int, *, kind: str) -> str:
        """Return the signed cursor for ``offset`` in the list named ``kind``."""
        if offset < 0:
            raise ValueError("offset must be >= 0")
        return self._signed(b"%d" % offset, kind)

    def make_position(self, position: str, *, kind: str) -> str:
        """Return the signed cursor for ``position`` (any text) in the list named ``kind``: written
        ``~`` and its base64url, so that it holds no ``:`` (a kind may)."""
        return self._signed(b"~" + b64url(position.encode("utf-8", "surrogatepass")).encode(), kind)

    def _signed(self, position: bytes, kind: str) -> str:
        payload = b"%s:%s" % (position, kind.encode("utf-8"))
        return b64url(payload + self.keyring.tag(payload, _TAG_BYTES))

    def read_cursor(self, cursor: str, *, kind: str) -> int:
        """Return the offset in ``cursor``; raise InvalidCursor unless it is
        well-formed, correctly signed and issued for ``kind``."""
        offset = self.read_position(cursor, kind=kind)
        if not (offset.isascii() and offset.isdigit()):
            raise InvalidCursor("cursor offset is malformed")
        return int(offset)

    def read_position(self, cursor: str, *, kind: str) -> str:
        """Return the position in ``cursor`` (:meth:`make_position`); raise InvalidCursor unless
        it is well-formed, correctly signed and issued for ``kind``."""
        if not isinstance(cursor, str) or not cursor:
            raise InvalidCursor("cursor must be a non-empty string")
        try:
            raw = unb64url(cursor)
        except (binascii.Error, ValueError):
            raise InvalidCursor("cursor is not valid base64url") from None
        payload, tag = raw[:-_TAG_BYTES], raw[-_TAG_BYTES:]
        if len(raw) <= _TAG_BYTES or not self.keyring.verify(payload, tag):
            raise InvalidCursor("cursor signature does not verify")
        position, _, cursor_kind = payload.partition(b":")
        if cursor_kind != kind.encode("utf-8"):
            raise InvalidCursor(f"cursor was issued for another list, not {kind!r}")
        if not position.startswith(b"~"):
            return position.decode("ascii", "replace")  # an offset (read_cursor checks its digits)
        try:
            return unb64url(position[1:].decode("ascii")).decode("utf-8", "surrogatepass")
        except (binascii.Error, ValueError):  # UnicodeDecodeError is a ValueError
            raise InvalidCursor("cursor position is malformed") from None

    def page(
        self, items: Sequence[_T], cursor: str | None, *, kind: str
    ) -> tuple[list[_T], str | None]:
        """Return ``(page, next_cursor)`` for ``items`` starting at ``cursor``.

        ``cursor`` None means the first page; ``next_cursor`` is None on the
        last page. Raises InvalidCursor for bad cursors or ones past the end.
        """
        start = 0 if cursor is None else self.read_cursor(cursor, kind=kind)
        if start > len(items):
            raise InvalidCursor("cursor points beyond the end of the list")
        end = start + self.page_size
        page = list(items[start:end])
        return page, (self.make_cursor(end, kind=kind) if end < len(items) else None)


def follow_cursors(
    fetch: Callable[[str | None], dict], method: str, max_pages: int = DEFAULT_MAX_PAGES
) -> Iterator[dict]:
    """The client's side: the results of ``fetch(cursor)`` page after page, starting with None and
    following each page's ``nextCursor`` until a page has none (an empty string is a cursor too).

    A server decides its cursors (2025-11-25 utilities/pagination: clients "MUST treat cursors
    as opaque tokens"), so a broken or hostile one could hand out new ones forever: past
    ``max_pages`` pages this raises :class:`~mcp_ref.errors.LimitExceeded` (``data.limit``);
    a cursor the server already gave (a loop), or a ``nextCursor`` that is not a string, is
    :class:`~mcp_ref.errors.McpError`.  Memory stays small: a digest of each cursor is kept,
    not the cursor.
    """
    if isinstance(max_pages, bool) or not isinstance(max_pages, int) or max_pages < 1:
        raise ValueError(f"max_pages must be a positive int, not {max_pages!r}")
    seen: set[bytes] = set()
    cursor: str | None = None
    pages = 0
    while True:
        result = fetch(cursor)
        pages += 1
        yield result
        cursor = result.get("nextCursor")
        if cursor is None:
            # 2026-07-28 server/utilities/pagination §Implementation Guidelines: clients MUST NOT
            # make "any determination based on cursor value other than whether a non-null value
            # was provided (e.g. an empty string is a valid cursor and thus MUST NOT be treated
            # as the end of results)".  Earlier revisions say the same in their words: the end
            # is a "missing nextCursor", and a present one means "there may be more results"
            # (schema, nextCursor).  A server answering "" for ever repeats it: refused below.
            return
        if not isinstance(cursor, str):
            raise McpError(f"{method}: the server's nextCursor is not a string")
        digest = hashlib.sha256(cursor.encode("utf-8", "surrogatepass")).digest()
        if digest in seen:
            raise McpError(f"{method}: the server repeated a pagination cursor")
        seen.add(digest)
        if pages >= max_pages:
            raise LimitExceeded(
                f"{method}: the server still had more after {max_pages} pages; this client "
                f"follows at most {max_pages} (max_pages)",
                data={"limit": max_pages},
            )
