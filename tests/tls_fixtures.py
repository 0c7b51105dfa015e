"""A TLS test server: certificates made at test time (``cryptography``) and the stdlib-based
WsgiServer of http_fixtures with its accepted connections wrapped server-side with ``ssl``.

``Pki(tmp_path)`` makes a CA and server certificates (files under tmp_path); ``serve_tls(server,
pki, names)`` serves an mcp_ref Server over https on 127.0.0.1 port 0 with a certificate for
``names``; ``served.use(pki.cert(...))`` swaps the certificate new connections get.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from pathlib import Path

from http_fixtures import Served


class Pki:
    """A certificate authority of its own and the certificates it signs, as PEM files under ``root``."""

    def __init__(self, root: Path, name: str = "mcp-ref test CA"):
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        self.root = root
        self.key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.UTC)
        self.certificate = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False
            )
            .sign(self.key, hashes.SHA256())
        )
        self.ca_path = root / f"ca-{id(self)}.pem"
        self.ca_path.write_bytes(self._pem(self.certificate))

    @staticmethod
    def _pem(certificate) -> bytes:
        from cryptography.hazmat.primitives.serialization import Encoding

        return certificate.public_bytes(Encoding.PEM)

    def cert(self, *names: str, client: bool = False) -> tuple[str, str]:
        """(certificate path, key path) of a certificate signed by this CA for ``names`` (DNS names or IP addresses)."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        alternatives: list[x509.GeneralName] = []
        for name in names:
            try:
                alternatives.append(x509.IPAddress(ipaddress.ip_address(name)))
            except ValueError:
                alternatives.append(x509.DNSName(name))
        now = datetime.datetime.now(datetime.UTC)
        usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
        certificate = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
            .issuer_name(self.certificate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(alternatives), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                critical=False,
            )
            .sign(self.key, hashes.SHA256())
        )
        stem = self.root / f"{names[0].replace(':', '_')}-{x509.random_serial_number()}"
        cert_path, key_path = stem.with_suffix(".crt"), stem.with_suffix(".key")
        cert_path.write_bytes(self._pem(certificate))
        key_path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        return str(cert_path), str(key_path)


class TlsServed(Served):
    """A :class:`Served` over https: ``url`` is ``https://127.0.0.1:PORT``; ``context`` its server context."""

    def __init__(self, httpd, app, context: ssl.SSLContext):
        super().__init__(httpd, app)
        self.context = context
        self.url = f"https://127.0.0.1:{httpd.port}"
        self.mcp = self.url + "/mcp"
        self.sse = self.url + "/sse"

    def use(self, cert: tuple[str, str]) -> None:
        """The certificate the connections accepted from now on are given."""
        self.context.load_cert_chain(*cert)


def start_tls(
    server, cert: tuple[str, str], *, wrap=None, client_ca: str | None = None, **options
) -> TlsServed:
    """Serve ``server`` over https with ``cert``; ``client_ca``: client certificates it signs are required."""
    from mcp_ref.http.wsgi_server import WsgiServer

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*cert)
    if client_ca is not None:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(cafile=client_ca)

    class TlsWsgiServer(WsgiServer):
        def get_request(self):
            connection, address = super().get_request()
            # The handshake happens on the connection's own thread, at its first read.
            return context.wrap_socket(
                connection, server_side=True, do_handshake_on_connect=False
            ), address

    app = server.wsgi_app(**options)
    httpd = TlsWsgiServer(("127.0.0.1", 0), wrap(app) if wrap else app)
    return TlsServed(httpd, app, context).start()
