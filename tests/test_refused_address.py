"""The address the cannot-connect tests point at refuses connections for the whole test.

It used to be a port the system gave out and took back at once: a server of a test running beside it (xdist) could
bind that port meanwhile, and the client then met that server's SASL handshake instead of "Connection refused"
(a soak's run failed so, in tests/test_first_contact_cli.py)."""

from __future__ import annotations

import socket

import pytest


def _port(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def test_nothing_else_can_listen_on_the_refused_address_while_a_test_holds_it(refused_address: str) -> None:
    with socket.socket() as server, pytest.raises(OSError, match="Address already in use"):
        server.bind(("127.0.0.1", _port(refused_address)))


def test_the_refused_address_refuses_connections(refused_address: str) -> None:
    with socket.socket() as client, pytest.raises(ConnectionRefusedError):
        client.connect(("127.0.0.1", _port(refused_address)))
