"""Throwaway TLS material for tests (``trustme``): a CA, a server certificate for 127.0.0.1 and localhost, and a
client certificate, written as PEM files for librdkafka's and the reader's ``ssl.*.location`` settings."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

import trustme


@dataclass(frozen=True)
class Tls:
    ca: trustme.CA
    ca_file: str
    client_cert_file: str
    client_key_file: str

    def server_context(self, *, require_client_cert: bool = False) -> ssl.SSLContext:
        """A listener's context; ``require_client_cert``: mutual TLS (a client without a certificate of this CA is
        refused in the handshake)."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
        if require_client_cert:
            context.verify_mode = ssl.CERT_REQUIRED
            self.ca.configure_trust(context)
        return context

    def client_conf(self, *, client_cert: bool = False) -> dict[str, str]:
        conf = {"ssl.ca.location": self.ca_file}
        if client_cert:
            conf |= {"ssl.certificate.location": self.client_cert_file, "ssl.key.location": self.client_key_file}
        return conf


def make_tls(directory: Path) -> Tls:
    ca = trustme.CA()
    ca_file = directory / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    client = ca.issue_cert("throttled-admin-client@example.com")
    cert_file, key_file = directory / "client.pem", directory / "client.key"
    for blob in client.cert_chain_pems:
        blob.write_to_path(str(cert_file), append=True)
    client.private_key_pem.write_to_path(str(key_file))
    return Tls(ca, str(ca_file), str(cert_file), str(key_file))
