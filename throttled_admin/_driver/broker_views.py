"""Every broker's Metadata, one request per broker, for ``wait_for_metadata`` (``_engine/visibility.py``).

The brokers are those the client's own Metadata lists; each is asked itself:

- on a plaintext listener, on a connection of our own (``metadata_wire``: a Metadata v1 request for all topics);
- otherwise (TLS, SASL: the application's security settings are needed), with a small AdminClient configured as
  the application's (its callbacks left out) and bootstrapped with that broker's address. librdkafka sends an
  application's Metadata request to whichever broker it has a connection to, and it connects to the brokers it
  learns of, but it says which one answered (``ClusterMetadata.orig_broker_id`` / ``orig_broker_name``): an
  answer from another broker is not taken for this broker's view, and the client is replaced by a fresh one,
  whose first connection is to that broker (up to ``_ATTEMPTS`` times a read).

Reads run on the scheduler's reader thread, never where deadlines are kept; the clients are destroyed with the
client.
"""

from __future__ import annotations

import struct
import threading
from typing import Any

from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._metadata import ClusterMetadata

from throttled_admin._driver.metadata_wire import read_topics
from throttled_admin._engine.visibility import BrokerViews, TopicView

__all__ = ["BrokerViewReader"]

# The application's callbacks stay with the application's client; these clients only read Metadata.
_OWN_CALLBACKS = ("error_cb", "throttle_cb", "stats_cb")
_READ_TIMEOUT_S = 2.0
_ATTEMPTS = 3


class BrokerViewReader:
    def __init__(self, conf: dict[str, Any]) -> None:
        self._conf = {key: value for key, value in conf.items() if key not in _OWN_CALLBACKS}
        self._plaintext = str(conf.get("security.protocol", "plaintext")).lower() == "plaintext"
        self._client_id = str(conf.get("client.id", "rdkafka"))
        self._lock = threading.Lock()
        self._clients: dict[tuple[int, str], AdminClient] = {}
        self._closed = False
        self._reading = False  # a read is using the clients: close() leaves destroying them to it

    def read(self, brokers: dict[int, str], names: list[str], timeout_s: float = _READ_TIMEOUT_S) -> BrokerViews:
        """``brokers``: node id -> "host:port". Each broker's view of ``names`` (None when it could not be read)."""
        with self._lock:
            self._reading = True
        try:
            return self._read(brokers, names, timeout_s)
        finally:
            with self._lock:
                self._reading = False
                leftover = list(self._clients.values()) if self._closed else []
                if self._closed:
                    self._clients = {}
            for client in leftover:  # closed while this read used them
                client.__exit__(None, None, None)

    def _read(self, brokers: dict[int, str], names: list[str], timeout_s: float) -> BrokerViews:
        views: BrokerViews = {}
        for node_id, address in sorted(brokers.items()):
            if self._plaintext:
                try:
                    views[node_id] = read_topics(address, names, client_id=self._client_id, timeout_s=timeout_s)
                except (OSError, ValueError, struct.error, UnicodeError):
                    views[node_id] = None
            else:
                views[node_id] = self._read_with_librdkafka(node_id, address, names, timeout_s)
        self._forget_others(brokers)
        return views

    def _read_with_librdkafka(
        self, node_id: int, address: str, names: list[str], timeout_s: float
    ) -> dict[str, TopicView] | None:
        for _ in range(_ATTEMPTS):
            client = self._client(node_id, address)
            if client is None:
                return None
            try:
                metadata = client.list_topics(timeout=timeout_s)
            except Exception:
                return None
            if _answered_by(metadata, node_id, address):
                return _view(metadata, names)
            self._drop((node_id, address))  # it answered from another broker: a fresh client next
        return None

    def _drop(self, key: tuple[int, str]) -> None:
        with self._lock:
            client = self._clients.pop(key, None)
        if client is not None:
            client.__exit__(None, None, None)

    def close(self) -> None:
        """Destroy the clients now, or, while a read uses them, when it ends (librdkafka's handle must not be
        destroyed under a call in progress)."""
        with self._lock:
            self._closed = True
            if self._reading:
                return
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.__exit__(None, None, None)  # destroys librdkafka's handle now

    def _client(self, node_id: int, address: str) -> AdminClient | None:
        with self._lock:
            if self._closed:
                return None
            client = self._clients.get((node_id, address))
            if client is None:
                client = AdminClient({**self._conf, "bootstrap.servers": address})
                self._clients[(node_id, address)] = client
            return client

    def _forget_others(self, brokers: dict[int, str]) -> None:
        """Brokers no longer listed (or moved) lose their clients."""
        with self._lock:
            gone = [key for key in self._clients if brokers.get(key[0]) != key[1]]
            clients = [self._clients.pop(key) for key in gone]
        for client in clients:
            client.__exit__(None, None, None)


def _answered_by(metadata: ClusterMetadata, node_id: int, address: str) -> bool:
    """The answer came from that broker: its id, or its address (librdkafka's bootstrap broker has no id yet)."""
    if metadata.orig_broker_id == node_id:
        return True
    name = str(metadata.orig_broker_name or "")
    return name.rsplit("/", 1)[0] == address


def _view(metadata: ClusterMetadata, names: list[str]) -> dict[str, TopicView]:
    view: dict[str, TopicView] = {}
    for name in names:
        topic = metadata.topics.get(name)
        if topic is None:
            continue
        error = topic.error
        if error is not None and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            continue  # not listed
        led = error is None and all(p.error is None and p.leader >= 0 for p in topic.partitions.values())
        view[name] = (len(topic.partitions), led)
    return view
