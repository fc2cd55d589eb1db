"""The reader's SASL client (``_driver/sasl_client.py``) and its settings (``_driver/broker_connection.py``), without a
network: SCRAM-SHA-256 against RFC 7677's worked example (an independent vector), a server that does not prove it
knows the password, malformed server messages, PLAIN's token, and settings whose reprs show no secret."""

from __future__ import annotations

import ssl

import pytest

from throttled_admin._driver.broker_connection import ConnectionSettings
from throttled_admin._driver.sasl_client import SaslError, ScramExchange, exchange_for
from throttled_admin._kafka import scram
from throttled_admin.testing._sasl import ScramCredentials, new_exchange

# RFC 7677, section 3: user "user", password "pencil"
CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def rfc_exchange() -> ScramExchange:
    return ScramExchange("SCRAM-SHA-256", "user", "pencil", nonce=CLIENT_NONCE)


def test_scram_sha_256_is_rfc_7677s_worked_example() -> None:
    exchange = rfc_exchange()
    assert exchange.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert exchange.respond(SERVER_FIRST) == CLIENT_FINAL
    assert exchange.respond(SERVER_FINAL) is None  # the server's signature checks out: done


@pytest.mark.parametrize(
    ("server_first", "server_final", "why"),
    [
        (SERVER_FIRST, b"v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "does not know the user's credentials"),
        (SERVER_FIRST, b"e=invalid-proof", "refused the SCRAM exchange: invalid-proof"),
        (b"r=someone-elses-nonce,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", None, "not valid"),
        (b"r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", None, "not valid"),  # no server nonce
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=not base64!,i=4096", None, "does not parse"),
        (b"m=ext,r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", None, "not valid"),
    ],
)
def test_a_server_that_does_not_check_out_fails_the_exchange(
    server_first: bytes, server_final: bytes | None, why: str
) -> None:
    def converse() -> None:
        exchange = rfc_exchange()
        exchange.respond(server_first)
        exchange.respond(server_final or b"")

    with pytest.raises(SaslError, match=why) as raised:
        converse()
    assert "pencil" not in str(raised.value)


@pytest.mark.parametrize("mechanism", sorted(scram.MECHANISMS))
def test_the_client_and_the_test_brokers_server_agree(mechanism: str) -> None:
    """A round trip with QuotaBroker's ScramSaslServer (each side checks the other's proof), escaping included."""
    user, password = "al=i,ce", "pässword"
    server = new_exchange(mechanism, ScramCredentials({user: password}), None)
    client = exchange_for(mechanism, user, password)
    token = client.respond(server.evaluate(client.first()))
    assert token is not None
    assert client.respond(server.evaluate(token)) is None
    assert server.user == user


def test_plain_is_one_token() -> None:
    exchange = exchange_for("PLAIN", "alice", "secret")
    assert exchange.first() == b"\x00alice\x00secret"
    assert exchange.respond(b"") is None
    assert "secret" not in repr(exchange)


def test_settings_show_no_secret_and_follow_librdkafkas_tls_defaults() -> None:
    conf = {
        "bootstrap.servers": "127.0.0.1:9",
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "SCRAM-SHA-512",  # librdkafka's alias of sasl.mechanism
        "sasl.username": "alice",
        "sasl.password": "Pw-1c9e44-s3cr3t",
        "ssl.key.password": "Kp-77aa01-k3y",
    }
    settings = ConnectionSettings.from_conf(conf)
    assert (settings.mechanism, settings.username, settings.client_id) == ("SCRAM-SHA-512", "alice", "rdkafka")
    assert settings.tls is not None
    assert settings.tls.check_hostname  # ssl.endpoint.identification.algorithm=https: librdkafka's default
    for text in (repr(settings), str(settings), repr(settings.tls)):
        assert "s3cr3t" not in text
        assert "k3y" not in text
    unverified = ConnectionSettings.from_conf({**conf, "enable.ssl.certificate.verification": "false"}).tls
    assert unverified is not None
    assert not unverified.check_hostname
    no_names = ConnectionSettings.from_conf({**conf, "ssl.endpoint.identification.algorithm": "none"}).tls
    assert no_names is not None
    assert not no_names.context().check_hostname
    assert no_names.context().verify_mode == ssl.CERT_REQUIRED
    assert ConnectionSettings.from_conf({"security.protocol": "PLAINTEXT"}).tls is None
