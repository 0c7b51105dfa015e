"""Where an HTTP answer ends, read as RFC 9112 says, for the ``requests`` adapter of the HTTP client.

* :class:`FinalResponse`: ``http.client``'s reader of an answer (the one urllib3's connections
  use), except that every interim (1xx) response but ``101`` is skipped, not only
  ``100 Continue`` (RFC 9110 §15.2: "A client MUST be able to parse one or more 1xx responses
  received prior to a final response, even if the client does not expect one"), at most
  :data:`MAX_INTERIM` of them, and a Transfer-Encoding other than ``chunked`` alone is refused
  (RFC 9112 §6.3);
* :func:`framing_adapter`: ``requests``' ``HTTPAdapter`` whose connections read answers with it
  (urllib3, like ``http.client``, skips ``100`` only: a ``103 Early Hints`` was taken for the
  answer).  Every HTTP request of the client goes through it.
"""

from __future__ import annotations

import functools
import http.client

#: Interim (1xx) responses skipped before an answer; past it the request fails (a server sending
#: ``103`` after ``103`` must not keep a client reading for ever).
MAX_INTERIM = 16


class FinalResponse(http.client.HTTPResponse):
    """An answer read by ``http.client``, its interim (1xx) responses skipped (see the module).

    It keeps the socket it reads (:attr:`sock`): the connection forgets its socket when the
    answer ends the connection (``Connection: close``, an HTTP/1.0 answer with no length), yet
    closing the transport must still wake a thread blocked reading it
    (:func:`~mcp_ref.http.bounded_reads.abort`)."""

    def __init__(self, sock, *args, **options):
        super().__init__(sock, *args, **options)
        #: The socket the answer is read from.
        self.sock = sock

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


@functools.cache
def _adapter_class():
    """``requests``' HTTPAdapter, its pools' connections reading answers with :class:`FinalResponse`
    (built when first asked for: requests and urllib3 load only for HTTP)."""
    import requests
    import urllib3
    from urllib3 import connection

    from .bounded_reads import watch

    class Watched:
        response_class = FinalResponse
        #: The request this connection carries, from its wait for the answer until the connection
        #: is back in the pool (:class:`~mcp_ref.http.bounded_reads.Underway`).
        underway = None

        def getresponse(self, *args, **options):
            """urllib3's, the socket first watched: giving up on the request shuts it down."""
            self.underway = watch(self.sock)
            return super().getresponse(*args, **options)

    class PlainConnection(Watched, connection.HTTPConnection):
        pass

    class TlsConnection(Watched, connection.HTTPSConnection):
        pass

    class Returned:
        def _put_conn(self, conn):
            """urllib3's, the connection's request released first: giving up on it no longer
            touches the socket, which carries the next request from now on."""
            underway = getattr(conn, "underway", None)
            if underway is not None:
                conn.underway = None
                underway.released()
            return super()._put_conn(conn)

    class PlainPool(Returned, urllib3.HTTPConnectionPool):
        ConnectionCls = PlainConnection

    class TlsPool(Returned, urllib3.HTTPSConnectionPool):
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
