"""Where an HTTP answer ends, read as RFC 9112 says, for both ways the HTTP client reads answers.

* :class:`FinalResponse`: ``http.client``'s reader of an answer, except that every interim
  (1xx) response but ``101`` is skipped, not only ``100 Continue`` (RFC 9110 §15.2: "A client
  MUST be able to parse one or more 1xx responses received prior to a final response, even if
  the client does not expect one"), at most :data:`MAX_INTERIM` of them;
* :func:`framing_adapter`: ``requests``' ``HTTPAdapter`` whose connections read answers with it
  (urllib3, like ``http.client``, skips ``100`` only: a ``103 Early Hints`` was taken for the
  answer);
* :func:`complete`: whether bytes already received hold a whole answer, framed as ``http.client``
  will read it (RFC 9112 §6.3: interim responses have no content, ``Transfer-Encoding: chunked``
  overrides any ``Content-Length``, a chunked body ends at its last chunk and trailer section).
  Anything it is not sure of is not complete: the thin path then reads the answer on a worker,
  under the request's timeout (:mod:`~mcp_ref.transports.http_fast`).
"""

from __future__ import annotations

import functools
import http.client
import re

#: Interim (1xx) responses skipped before an answer; past it the request fails (a server sending
#: ``103`` after ``103`` must not keep a client reading for ever).
MAX_INTERIM = 16

_HEX = re.compile(rb"[0-9a-fA-F]{1,16}")
_DIGITS = re.compile(rb"[0-9]{1,18}")


class FinalResponse(http.client.HTTPResponse):
    """An answer read by ``http.client``, its interim (1xx) responses skipped (see the module)."""

    def _read_status(self):
        """The status line of the final response: each interim one before it (its header section
        too) is read and dropped; ``101 Switching Protocols`` is final."""
        for _ in range(MAX_INTERIM + 1):
            version, status, reason = super()._read_status()
            if not 100 <= status < 200 or status == 101:
                return version, status, reason
            # RFC 9110 §15.2: a 1xx response "is terminated by the end of the header section";
            # its fields (Link, a Content-Length ...) say nothing of the answer to come.
            http.client.parse_headers(self.fp)
        raise http.client.HTTPException(
            f"more than {MAX_INTERIM} interim (1xx) responses before the answer"
        )

    def begin(self) -> None:
        """Read the status line and header section; then the framing RFC 9112 §6.3 gives the body:
        ``Transfer-Encoding: chunked`` overrides any Content-Length (and the connection is not used
        again: two readers of such an answer could disagree on where it ends); any other
        Transfer-Encoding (``gzip, chunked``, two fields) is refused, never guessed at."""
        super().begin()
        encodings = self.msg.get_all("Transfer-Encoding") or []
        if not encodings:
            return
        if len(encodings) > 1 or encodings[0].lower() != "chunked":  # as http.client compares
            self.close()
            refused = ", ".join(encodings)
            raise http.client.HTTPException(f"an answer with Transfer-Encoding {refused!r}")
        if self.msg.get("Content-Length") is not None:
            self.will_close = True


class FramingConnection(http.client.HTTPConnection):
    """An ``http.client`` connection whose answers are read with :class:`FinalResponse`."""

    response_class = FinalResponse


def complete(data: bytes) -> bool:
    """Whether ``data`` (the start of what the server sent) holds a whole answer: any interim
    responses, then a final one with the body its framing gives (see the module).  False for
    anything ``http.client`` could read otherwise (a bare LF in a header section, a folded
    line, a Transfer-Encoding other than ``chunked`` alone, Content-Lengths that disagree)."""
    start = 0
    for _ in range(MAX_INTERIM + 1):
        end = data.find(b"\r\n\r\n", start)
        if end < 0:
            return False
        head = data[start:end]
        status = _status(head)
        if status is None:
            return False
        if 100 <= status < 200 and status != 101:
            start = end + 4  # an interim response: no content, whatever its fields say
            continue
        fields = _fields(head)
        if fields is None:
            return False
        return _body_complete(status, fields, data, end + 4)
    return False


def _status(head: bytes) -> int | None:
    """The status code of a head's status line, or None if it is not plainly one."""
    line = head.split(b"\r\n", 1)[0]
    parts = line.split(b" ", 2)
    if (
        len(parts) < 2
        or not parts[0].startswith(b"HTTP/1.")
        or len(parts[1]) != 3
        or not parts[1].isdigit()
    ):
        return None
    return int(parts[1])


def _fields(head: bytes) -> dict[bytes, list[bytes]] | None:
    """A head's header fields (lower-case names, their values in order), or None where
    ``http.client`` might split the section otherwise: a bare LF, a folded line, a line without
    a colon."""
    if head.count(b"\n") != head.count(b"\r\n"):
        return None
    fields: dict[bytes, list[bytes]] = {}
    for line in head.split(b"\r\n")[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not name or name[:1] in (b" ", b"\t") or name != name.strip():
            return None
        fields.setdefault(name.lower(), []).append(value.strip(b" \t"))
    return fields


def _body_complete(status: int, fields: dict[bytes, list[bytes]], data: bytes, start: int) -> bool:
    """RFC 9112 §6.3, for the answer to a POST whose header section ends at ``start``."""
    if status in (204, 304):
        return True  # §6.3 item 1: no content, whatever the fields say
    encodings = fields.get(b"transfer-encoding")
    if encodings is not None:
        # §6.3 item 3: Transfer-Encoding overrides Content-Length.  http.client reads a body as
        # chunked only when the one field says "chunked" alone; other codings: read to the close.
        if len(encodings) != 1 or encodings[0].lower() != b"chunked":
            return False
        return _chunked_complete(data, start)
    lengths = fields.get(b"content-length")
    if not lengths:
        return False  # §6.3 item 8: read until the connection closes
    values = {value.strip() for field in lengths for value in field.split(b",")}
    if len(values) != 1:
        return False  # §6.3 item 5: differing lengths are an error (the worker reports it)
    value = values.pop()
    if not _DIGITS.fullmatch(value):
        return False
    return len(data) - start >= int(value)


def _chunked_complete(data: bytes, start: int) -> bool:
    """Whether a chunked body starting at ``start`` ends within ``data``: each chunk-size line
    (plain hex, an extension after ``;``), its data and CRLF, the last chunk, then the trailer
    section."""
    position = start
    while True:
        line_end = data.find(b"\r\n", position)
        if line_end < 0:
            return False
        size = data[position:line_end].split(b";", 1)[0].strip(b" \t")
        if not _HEX.fullmatch(size):
            return False
        length = int(size, 16)
        position = line_end + 2
        if length == 0:
            break
        position += length
        if data[position : position + 2] != b"\r\n":
            return False  # not there yet, or a chunk longer than its size said
        position += 2
    while True:  # the trailer section: field lines up to an empty one
        line_end = data.find(b"\r\n", position)
        if line_end < 0:
            return False
        if line_end == position:
            return True
        if b"\n" in data[position:line_end]:
            return False
        position = line_end + 2


@functools.cache
def _adapter_class():
    """``requests``' HTTPAdapter, its pools' connections reading answers with :class:`FinalResponse`
    (built when first asked for: requests and urllib3 load only for HTTP)."""
    import requests
    import urllib3
    from urllib3 import connection

    from .http_plumbing import watch

    class Watched:
        response_class = FinalResponse

        def getresponse(self, *args, **options):
            """urllib3's, the socket first watched: giving up on the request shuts it down."""
            watch(self.sock)
            return super().getresponse(*args, **options)

    class PlainConnection(Watched, connection.HTTPConnection):
        pass

    class TlsConnection(Watched, connection.HTTPSConnection):
        pass

    class PlainPool(urllib3.HTTPConnectionPool):
        ConnectionCls = PlainConnection

    class TlsPool(urllib3.HTTPSConnectionPool):
        ConnectionCls = TlsConnection

    pools = {"http": PlainPool, "https": TlsPool}

    class FramingAdapter(requests.adapters.HTTPAdapter):
        """requests' adapter, reading answers as :class:`FinalResponse` does (1xx skipped)."""

        def init_poolmanager(self, *args, **options) -> None:
            """requests' pool manager, making pools of this module's connections."""
            super().init_poolmanager(*args, **options)
            self.poolmanager.pool_classes_by_scheme = pools

        def proxy_manager_for(self, proxy, **options):
            """requests' manager for ``proxy``, making pools of this module's connections (an HTTP
            proxy; a SOCKS one keeps urllib3's own)."""
            manager = super().proxy_manager_for(proxy, **options)
            if not proxy.lower().startswith("socks"):
                manager.pool_classes_by_scheme = pools
            return manager

    return FramingAdapter


def framing_adapter(**options):
    """A new ``requests.adapters.HTTPAdapter`` (``options`` as its own) whose answers are read with
    :class:`FinalResponse`: interim 1xx responses skipped."""
    return _adapter_class()(**options)


def is_framing_adapter(adapter) -> bool:
    """Whether ``adapter`` is one :func:`framing_adapter` made (not a subclass the user brought)."""
    return type(adapter) is _adapter_class()
