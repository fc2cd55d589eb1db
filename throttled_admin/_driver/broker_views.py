"""Every broker's Metadata, one request per broker, for ``wait_for_metadata`` (``_engine/visibility.py``).

librdkafka sends a Metadata request to any broker it has a connection to, and says which one answered
(``ClusterMetadata.orig_broker_id`` / ``orig_broker_name``). To ask one broker in particular, each broker gets a
small AdminClient of its own, bootstrapped with that broker's address alone and configured as the application's
client (security settings included; the application's callbacks left out): its only connection is to that
broker. An answer that came from another broker all the same is not taken for that broker's view.

The brokers are those the client's own Metadata lists. Reads run on the scheduler's reader thread, never where
deadlines are kept; the clients are kept for the next read and destroyed with the client.
"""

from __future__ import annotations

import threading
from typing import Any

from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._metadata import ClusterMetadata

from throttled_admin._engine.visibility import BrokerViews, TopicView

__all__ = ["BrokerViewReader"]

# The application's callbacks stay with the application's client; these clients only read Metadata.
_OWN_CALLBACKS = ("error_cb", "throttle_cb", "stats_cb")
_READ_TIMEOUT_S = 2.0


class BrokerViewReader:
    def __init__(self, conf: dict[str, Any]) -> None:
        self._conf = {key: value for key, value in conf.items() if key not in _OWN_CALLBACKS}
        self._lock = threading.Lock()
        self._clients: dict[tuple[int, str], AdminClient] = {}
        self._closed = False

    def read(self, brokers: dict[int, str], names: list[str], timeout_s: float = _READ_TIMEOUT_S) -> BrokerViews:
        """``brokers``: node id -> "host:port". Each broker's view of ``names`` (None when it could not be read)."""
        views: BrokerViews = {}
        for node_id, address in sorted(brokers.items()):
            client = self._client(node_id, address)
            if client is None:
                views[node_id] = None
                continue
            try:
                metadata = client.list_topics(timeout=timeout_s)
            except Exception:
                views[node_id] = None
                continue
            views[node_id] = _view(metadata, names) if _answered_by(metadata, node_id, address) else None
        self._forget_others(brokers)
        return views

    def close(self) -> None:
        with self._lock:
            self._closed = True
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
