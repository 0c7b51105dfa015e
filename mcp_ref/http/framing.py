"""Where an HTTP answer ends, read as RFC 9112 says, for the ``requests`` adapter of the HTTP client.

* :class:`FinalResponse`: ``http.client``'s reader of an answer (the one urllib3's connections
  use), except that every interim (1xx) response but ``101`` is skipped, not only
  ``100 Continue`` (RFC 9110 §15.2: "A client MUST be able to parse one or more 1xx responses
  received prior to a final response, even if the client does not expect one"), at most
  :data:`MAX_INTERIM` of them, and a Transfer-Encoding other than ``chunked`` alone is refused
  (RFC 9112 §6.3);
* :func:`framing_adapter`: ``requests``' ``HTTPAdapter`` whose connections, direct or through an
  HTTP, HTTPS or SOCKS proxy, read answers with it (urllib3, like ``http.client``, skips ``100``
  only: a ``103 Early Hints`` was taken for the answer).  Every HTTP request of the client goes
  through it, and those of :class:`~mcp_ref.oauth.OAuth`'s own session (:func:`framing_session`);
* its connections tell an exchange sent within :func:`~mcp_ref.http.bounded_reads.exchange_within`
  (the OAuth client's) which sockets carry it, so that its deadline covers connecting, the status
  line and the headers, and the adapter fails the exchange once the deadline passed; a connection
  whose socket the deadline shut down is closed, never put back in its pool.
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

    from .bounded_reads import exchange_deadline, watch

    class Watched:
        response_class = FinalResponse
        #: The request this connection carries, from its wait for the answer until the connection
        #: is back in the pool (:class:`~mcp_ref.http.bounded_reads.Underway`).
        underway = None
        #: The deadline of the exchange it carries, until it is back in the pool
        #: (:class:`~mcp_ref.http.bounded_reads.ExchangeDeadline`).
        deadline = None

        def _new_conn(self):
            """urllib3's new socket (before any TLS handshake on it), under the exchange's deadline."""
            sock = super()._new_conn()
            self._under_deadline(sock)
            return sock

        def request(self, *args, **options):
            """urllib3's; a connection from the pool is put under the exchange's deadline first."""
            if self.sock is not None:
                self._under_deadline(self.sock)
            return super().request(*args, **options)

        def _under_deadline(self, sock) -> None:
            deadline = exchange_deadline()
            if deadline is not None:
                self.deadline = deadline
                deadline.carries(self, sock)

        def getresponse(self, *args, **options):
            """urllib3's, the socket first watched: giving up on the request shuts it down."""
            self.underway = watch(self.sock)
            return super().getresponse(*args, **options)

    class Returned:
        def _put_conn(self, conn):
            """urllib3's, the connection's request released first: giving up on it no longer
            touches the socket, which carries the next request from now on; and the exchange's
            deadline no longer either: a connection whose socket it shut down is closed instead."""
            underway = getattr(conn, "underway", None)
            if underway is not None:
                conn.underway = None
                underway.released()
            deadline = getattr(conn, "deadline", None)
            if deadline is not None:
                conn.deadline = None
                if not deadline.released(conn):
                    conn.close()
                    conn = None  # (urllib3's own mark of a connection gone: a new one is made)
            return super()._put_conn(conn)

    def pools_like(plain_pool, tls_pool) -> dict:
        """Pools of ``plain_pool``'s and ``tls_pool``'s kind whose connections are :class:`Watched`
        and released as they go back (:class:`Returned`), by URL scheme."""

        class PlainConnection(Watched, plain_pool.ConnectionCls):
            pass

        class TlsConnection(Watched, tls_pool.ConnectionCls):
            pass

        class PlainPool(Returned, plain_pool):
            ConnectionCls = PlainConnection

        class TlsPool(Returned, tls_pool):
            ConnectionCls = TlsConnection

        return {"http": PlainPool, "https": TlsPool}

    pools = pools_like(urllib3.HTTPConnectionPool, urllib3.HTTPSConnectionPool)

    @functools.cache
    def socks_pools() -> dict:
        """The same through a SOCKS proxy (urllib3's SOCKS pools: PySocks, which requests has
        imported by then, ``requests[socks]``)."""
        from urllib3.contrib import socks

        return pools_like(socks.SOCKSHTTPConnectionPool, socks.SOCKSHTTPSConnectionPool)

    class FramingAdapter(requests.adapters.HTTPAdapter):
        """requests' adapter, reading answers as :class:`FinalResponse` does (1xx skipped), and
        keeping the deadline of an exchange sent within
        :func:`~mcp_ref.http.bounded_reads.exchange_within` over its status line and headers."""

        def send(self, request, *args, **options):
            """requests'; ``requests.exceptions.ReadTimeout`` when the exchange's deadline passed
            before the header section was read (an answer cut short by it is never taken)."""
            try:
                response = super().send(request, *args, **options)
            except requests.RequestException:
                deadline = exchange_deadline()
                if deadline is not None and deadline.expired:
                    raise deadline.passed() from None
                raise
            deadline = exchange_deadline()
            if deadline is not None and deadline.expired:
                response.close()
                raise deadline.passed()
            return response

        def init_poolmanager(self, *args, **options) -> None:
            """requests' pool manager, making pools of this module's connections."""
            super().init_poolmanager(*args, **options)
            self.poolmanager.pool_classes_by_scheme = pools

        def proxy_manager_for(self, proxy, **options):
            """requests' manager for ``proxy`` (HTTP or SOCKS), making pools of this module's
            connections: every answer is read alike, proxied or not."""
            manager = super().proxy_manager_for(proxy, **options)
            is_socks = proxy.lower().startswith("socks")
            manager.pool_classes_by_scheme = socks_pools() if is_socks else pools
            return manager

    return FramingAdapter


def framing_session():
    """A new ``requests.Session`` whose ``http://`` and ``https://`` requests go through a
    :func:`framing_adapter`."""
    import requests

    http = requests.Session()
    adapter = framing_adapter()
    http.mount("http://", adapter)
    http.mount("https://", adapter)
    return http


def framing_adapter(**options):
    """A new ``requests.adapters.HTTPAdapter`` (``options`` as its own) whose answers are read with
    :class:`FinalResponse`: interim 1xx responses skipped."""
    return _adapter_class()(**options)
