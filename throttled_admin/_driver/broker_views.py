"""Every broker's Metadata of the names ``wait_for_metadata`` waits for, one request per broker
(``_engine/visibility.py``): the broker-views reader.

Each broker is asked itself, on a connection of the reader's own (never the application client's: after a
throttled response that one is muted, KIP-219, and a Metadata request there waits out the throttle), with the
application's security settings (``broker_connection``: PLAINTEXT, TLS with PEM files, SASL PLAIN and
SCRAM-SHA-256/512), a Metadata v10+ request for those names only (``metadata_wire``): topic ids, no listing of
every topic, nothing auto-created. The connections stay open from read to read (a TLS or SCRAM handshake per read
would cost more than the reads).

A read asks a broker it knows (or else a bootstrap server) first: its answer lists the brokers and is that
broker's view; then each other broker listed. A broker that cannot be read (unreachable, refused, an answer that
does not parse) has no view (None), and its connection is made anew next time; a connection kept from an earlier
read is given one more try on a fresh one, since brokers close idle connections. An answer with a top-level error
(Metadata v13, KIP-1102) is no view either, never "no such topic"; REBOOTSTRAP_REQUIRED also forgets the broker
list, so that reads start again from the bootstrap servers, as Java's clients rebootstrap.

The fallback (``librdkafka_views``), for set-ups these connections do not speak (GSSAPI, OAUTHBEARER, other TLS
settings) and for brokers without Metadata v10 (Kafka before 2.8): librdkafka's ``list_topics``, one small client
per broker, whose views carry no topic ids and list every topic. The choice is logged once, without secrets.

Reads run on the scheduler's views reader thread, one at a time; ``close()`` may come from any thread.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import ssl
import struct
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from throttled_admin._driver.broker_connection import (
    BrokerConnection,
    BrokerRefused,
    ConnectionSettings,
    NoTopicIds,
    Unsupported,
    bootstrap_addresses,
)
from throttled_admin._driver.librdkafka_views import LibrdkafkaViews
from throttled_admin._driver.metadata_wire import MetadataAnswer
from throttled_admin._driver.quorum_wire import QuorumAnswer
from throttled_admin._driver.sasl_client import SaslError
from throttled_admin._driver.secret_hider import SecretHider
from throttled_admin._engine.visibility import BrokerViews

__all__ = ["BrokerViewReader"]

log = logging.getLogger("throttled_admin")

_READ_TIMEOUT_S = 2.0
_REBOOTSTRAP_REQUIRED = 129  # Metadata v13's top-level error asking the client to rebootstrap (KIP-1102)
# What a broker that cannot be read raises (the connection is dropped; its view is None).
_UNREADABLE = (OSError, ValueError, struct.error, UnicodeError, BrokerRefused, SaslError)


_T = TypeVar("_T")
# DescribeQuorum's errors another broker may not give: NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, NOT_CONTROLLER,
# COORDINATOR_NOT_AVAILABLE (a broker that forwards it while the quorum elects)
_QUORUM_TRANSIENT = frozenset({6, 7, 41, 15})


class BrokerViewReader:
    def __init__(self, conf: dict[str, Any], hider: SecretHider | None = None) -> None:
        """``hider``: the client's (``set_sasl_credentials`` adds to it); else one of ``conf``'s secrets."""
        conf = dict(conf)  # (its own: ``set_sasl_credentials`` changes it)
        hider = hider if hider is not None else SecretHider(conf)

        def librdkafka() -> LibrdkafkaViews:  # the fallback, made when needed (no attribute shows the conf)
            return LibrdkafkaViews(conf, hider.text)

        def set_credentials(username: str, password: str) -> None:  # (the fallback's conf from now on)
            conf.update({"sasl.username": username, "sasl.password": password})

        self._librdkafka = librdkafka
        self._set_credentials = set_credentials
        self._bootstrap = bootstrap_addresses(conf)
        self._lock = threading.Lock()
        self._connections: dict[str, BrokerConnection] = {}  # address -> an open connection
        self._opening: set[BrokerConnection] = set()  # connections in their handshake (``close`` shuts them too)
        self._brokers: dict[int, str] = {}  # the last list read: used when no broker answers
        self._quorum_from: list[str] = []  # the address that answered the last DescribeQuorum
        self._closed = False
        self._fallback: LibrdkafkaViews | None = None
        self._context: ssl.SSLContext | None = None
        try:
            self._settings: ConnectionSettings | None = ConnectionSettings.from_conf(conf)
        except Unsupported as exc:
            self._settings = None
            self._fall_back(f"its own connections do not speak the client's {exc}")

    def __repr__(self) -> str:
        how = "librdkafka" if self._fallback is not None else repr(self._settings)
        return f"BrokerViewReader({how})"

    def set_sasl_credentials(self, username: str, password: str) -> None:
        """New SASL credentials for the connections opened from now on (those open have authenticated)."""
        with self._lock:
            self._set_credentials(username, password)
            if self._settings is not None:
                self._settings = dataclasses.replace(self._settings, username=username, password=password)
            fallback = self._fallback
        if fallback is not None:
            fallback.set_sasl_credentials(username, password)

    def read_cluster(self, names: list[str], timeout_s: float = _READ_TIMEOUT_S) -> BrokerViews:
        """Every broker's view of ``names``: the brokers listed by the first that answers (or the last list)."""
        if self._fallback is None:
            try:
                return self._read(names, timeout_s)
            except (NoTopicIds, Unsupported) as exc:
                self._fall_back(str(exc))
        assert self._fallback is not None
        return self._fallback.read_cluster(names, timeout_s)

    def _fall_back(self, why: str) -> None:
        log.info("wait_for_metadata reads the brokers through librdkafka (no topic ids): %s", why)
        with self._lock:
            self._fallback = self._librdkafka()
            if self._closed:
                self._fallback.close()
            connections, self._connections = list(self._connections.values()), {}
        for connection in connections:
            connection.close()

    def _read(self, names: list[str], timeout_s: float) -> BrokerViews:
        listed: dict[int, str] = {}
        first: tuple[str, MetadataAnswer] | None = None
        for address in dict.fromkeys([*self._brokers.values(), *self._bootstrap]):
            answer = self._ask(address, names, timeout_s)
            if answer is not None:
                listed, first = answer.brokers, (address, answer)
                break
        self._brokers = brokers = listed or self._brokers
        views: BrokerViews = {}
        for node_id, address in sorted(brokers.items()):
            if first is not None and first[0] == address:
                views[node_id] = first[1].topics
            else:
                answer = self._ask(address, names, timeout_s)
                views[node_id] = None if answer is None else answer.topics
        self._forget_others(set(brokers.values()))
        return views

    def read_quorum(self, timeout_s: float = _READ_TIMEOUT_S) -> QuorumAnswer | None:
        """Who leads the controller quorum, and in which epoch (DescribeQuorum, which a broker forwards to the
        controller), from the first broker that answers: the one that answered last, then the others, each for half
        of ``timeout_s`` at most (a node that does not answer leaves time for the next). None when none can be read
        in ``timeout_s`` or the reader is librdkafka's (which cannot send it); a broker without the API answers
        UNSUPPORTED_VERSION for the cluster."""
        if self._fallback is not None:
            return None
        end = time.monotonic() + timeout_s
        refused: QuorumAnswer | None = None
        try:
            for address in dict.fromkeys([*self._quorum_from, *self._brokers.values(), *self._bootstrap]):
                if (now := time.monotonic()) >= end:
                    break
                answer = self._on_connection(address, min(end, now + timeout_s / 2), BrokerConnection.quorum)
                if answer is None:
                    continue
                if answer.error_code in _QUORUM_TRANSIENT:  # (a broker whose view of the controller lags an election)
                    refused = answer
                    continue
                self._quorum_from = [address]
                return answer
        except (NoTopicIds, Unsupported):  # (a views read falls back on librdkafka for these; this read has none)
            pass
        return refused

    def _ask(self, address: str, names: list[str], timeout_s: float) -> MetadataAnswer | None:
        """One broker's answer, or None when it cannot be read or refuses the request as a whole."""
        answer = self._on_connection(
            address, time.monotonic() + timeout_s, lambda connection, deadline: connection.metadata(names, deadline)
        )
        if answer is None or answer.error_code == 0:
            return answer
        # Metadata v13's top-level error (KIP-1102) refuses the whole answer: its empty topic list says nothing of
        # the topics, so the broker has no view. On REBOOTSTRAP_REQUIRED Java's clients drop what they know of the
        # cluster and start again from the bootstrap servers (NetworkClient, KafkaAdminClient's metadata call): the
        # broker list is forgotten likewise.
        log.debug("wait_for_metadata: %s refused Metadata (error %d)", address, answer.error_code)
        if answer.error_code == _REBOOTSTRAP_REQUIRED:
            self._brokers = {}
        return None

    def _on_connection(
        self, address: str, deadline: float, ask: Callable[[BrokerConnection, float], _T | None]
    ) -> _T | None:
        """``ask`` on the open connection to ``address``, or None when it cannot be read. A connection kept from an
        earlier read that fails is tried once more on a fresh one."""
        for _ in range(2):
            connection, fresh = self._connection(address, deadline)
            if connection is None:
                return None
            try:
                return ask(connection, deadline)
            except _UNREADABLE as exc:
                log.debug("cannot read %s (%s)", address, type(exc).__name__)
                self._drop(address, connection)
                if fresh:
                    return None
        return None

    def _connection(self, address: str, deadline: float) -> tuple[BrokerConnection | None, bool]:
        """(the open connection to ``address``, whether it was made now); None when it cannot be made."""
        assert self._settings is not None
        with self._lock:
            if self._closed:
                return None, False
            connection = self._connections.get(address)
        if connection is not None and not connection.expired:
            return connection, False
        if connection is not None:
            self._drop(address, connection)
        if self._settings.tls is not None and self._context is None:
            try:
                self._context = self._settings.tls.context()
            except OSError as exc:  # ssl.SSLError too: files librdkafka loaded that Python's ssl does not
                raise Unsupported(f"its TLS files do not load here ({type(exc).__name__})") from None
        opening: list[BrokerConnection] = []
        try:
            connection = BrokerConnection(
                address, self._settings, self._context, deadline, functools.partial(self._opened, opening)
            )
        except _UNREADABLE as exc:
            log.debug("wait_for_metadata: cannot connect to %s (%s: %s)", address, type(exc).__name__, exc)
            return None, True
        finally:
            with self._lock:
                self._opening.difference_update(opening)
        with self._lock:
            if self._closed:
                connection.close()
                return None, True
            self._connections[address] = connection
        return connection, True

    def _opened(self, opening: list[BrokerConnection], connection: BrokerConnection) -> None:
        """A connection's socket exists, its connect and handshake to come: ``close`` shuts it too (none once
        closed)."""
        with self._lock:
            if self._closed:
                raise OSError("the broker-views reader is closed")
            self._opening.add(connection)
        opening.append(connection)

    def _drop(self, address: str, connection: BrokerConnection) -> None:
        with self._lock:
            if self._connections.get(address) is connection:
                del self._connections[address]
        connection.close()

    def _forget_others(self, addresses: set[str]) -> None:
        """Connections to addresses no broker is listed at any more are closed."""
        with self._lock:
            gone = [address for address in self._connections if address not in addresses]
            connections = [self._connections.pop(address) for address in gone]
        for connection in connections:
            connection.close()

    def close(self) -> None:
        """Close every connection, those in their handshake too (a read under way finds its socket shut, and ends at
        once: its broker has no view)."""
        with self._lock:
            self._closed = True
            connections, self._connections = [*self._connections.values(), *self._opening], {}
            fallback = self._fallback
        for connection in connections:
            connection.close()
        if fallback is not None:
            fallback.close()
