"""Real proxies on 127.0.0.1 (port 0) for the HTTP client's tests, and :func:`route_through`, which
points a client made next at one through the environment, as a user's shell would.

* :class:`TlsTunnelProxy`: an ``https://`` proxy answering ``CONNECT``: a client reaching an
  https target through it speaks TLS inside TLS (urllib3's SSLTransport).
* :class:`Socks5Proxy`: a SOCKS5 proxy (RFC 1928, no authentication, ``CONNECT`` only), which
  requests reaches through urllib3's own SOCKS pools (PySocks: ``requests[socks]``).

Each relays the bytes of a tunnel both ways until either side ends it, or :meth:`stop`.
"""

from __future__ import annotations

import select
import socket
import ssl
import struct
import threading

from conftest import WAIT

#: What :func:`route_through` can route a client through.
ROUTES = ("direct", "https-proxy", "socks5")
#: The proxy variables a shell may hold, cleared before one is set (a lower-case one would win).
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


class Relay:
    """A listener on 127.0.0.1 handing each connection to :meth:`open_tunnel` on a thread of its
    own; ``tunnels`` counts the tunnels opened."""

    scheme = ""

    def __init__(self):
        self.stopped = threading.Event()
        self.tunnels = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"{self.scheme}://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:  # the listener closed
                return
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        try:
            self.open_tunnel(connection)
        except (OSError, ValueError):  # the client went, or spoke no proxy protocol
            pass
        finally:
            connection.close()

    def open_tunnel(self, connection: socket.socket) -> None:
        """Read the client's request for a tunnel on ``connection``, open it and :meth:`relay`."""
        raise NotImplementedError

    def relay(self, client: socket.socket, target: socket.socket) -> None:
        """Bytes both ways until either side ends (one thread: an SSL object is not for two)."""
        self.tunnels += 1
        while not self.stopped.is_set():
            ready, _, _ = select.select([client, target], [], [], 0.05)
            if isinstance(client, ssl.SSLSocket) and client.pending():
                ready = [client, *ready]
            for side in dict.fromkeys(ready):
                try:
                    data = side.recv(65536)
                except ssl.SSLWantReadError:
                    continue
                if not data:
                    return
                (target if side is client else client).sendall(data)

    def stop(self) -> None:
        """End every tunnel and stop listening."""
        self.stopped.set()
        self.listener.close()


class TlsTunnelProxy(Relay):
    """An ``https://`` proxy: TLS to the proxy, then ``CONNECT host:port``."""

    scheme = "https"

    def __init__(self, tls: ssl.SSLContext):
        self.tls = tls
        super().__init__()

    def open_tunnel(self, connection: socket.socket) -> None:
        """Read the ``CONNECT`` head over TLS, answer 200, and relay."""
        with self.tls.wrap_socket(connection, server_side=True) as client:
            head = b""
            while b"\r\n\r\n" not in head:
                data = client.recv(4096)
                if not data:
                    return
                head += data
            host, port = head.split()[1].decode().rsplit(":", 1)
            with socket.create_connection((host, int(port)), timeout=WAIT) as target:
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                self.relay(client, target)


class Socks5Proxy(Relay):
    """A SOCKS5 proxy (RFC 1928): no authentication, ``CONNECT`` to a name or an IPv4 address."""

    scheme = "socks5h"  # the proxy resolves the name, as a user's socks5h:// proxy does

    def open_tunnel(self, connection: socket.socket) -> None:
        """The greeting, the ``CONNECT`` request and its reply (RFC 1928 §3, §4, §6); then relay."""
        _version, methods = _exactly(connection, 2)
        _exactly(connection, methods)
        connection.sendall(b"\x05\x00")  # version 5, no authentication required
        _version, command, _reserved, address_type = _exactly(connection, 4)
        if address_type == 3:  # a domain name, its length first
            host = _exactly(connection, _exactly(connection, 1)[0]).decode()
        elif address_type == 1:
            host = socket.inet_ntoa(_exactly(connection, 4))
        else:
            raise ValueError(f"address type {address_type} is not served here")
        (port,) = struct.unpack("!H", _exactly(connection, 2))
        if command != 1:
            raise ValueError(f"SOCKS command {command} is not served here")
        with socket.create_connection((host, port), timeout=WAIT) as target:
            bound = socket.inet_aton("127.0.0.1") + struct.pack("!H", target.getsockname()[1])
            connection.sendall(b"\x05\x00\x00\x01" + bound)  # succeeded, bound to an IPv4 address
            self.relay(connection, target)


def _exactly(connection: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        piece = connection.recv(size - len(data))
        if not piece:
            raise ValueError("the client ended the SOCKS exchange")
        data += piece
    return data


def route_through(monkeypatch, route: str, tls: ssl.SSLContext | None = None) -> Relay | None:
    """Route the clients made from now on (the environment is read as a client is made) ``route``:
    ``"direct"`` (no proxy), ``"https-proxy"`` (a :class:`TlsTunnelProxy` presenting ``tls``'s
    certificate) or ``"socks5"``.  The proxy started, or None; the caller stops it."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    if route == "direct":
        return None
    if route == "https-proxy":
        assert tls is not None, "an https:// proxy needs a certificate"
        proxy: Relay = TlsTunnelProxy(tls)
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        return proxy
    proxy = Socks5Proxy()
    monkeypatch.setenv("ALL_PROXY", proxy.url)
    return proxy
