"""Every broker's Metadata through librdkafka: the broker-views reader's fallback (``broker_views``) for set-ups the
client's own connections do not speak (GSSAPI, OAUTHBEARER, TLS settings other than PEM files: see
``broker_connection``), and for brokers without Metadata v10.

Each broker is asked with a small AdminClient configured as the application's (its callbacks left out) and
bootstrapped with that broker's address. librdkafka sends an application's Metadata request to whichever broker it
has a connection to, and it connects to the brokers it learns of, but it says which one answered
(``ClusterMetadata.orig_broker_id`` / ``orig_broker_name``). A fresh client's first answer comes from the broker it
was bootstrapped with only about half the time (librdkafka 2.16 prefers a broker it has learned the id of): an
answer from another listed broker is taken as that broker's view, the client becomes that broker's, and a fresh
client is made for the broker still unread, up to ``_ATTEMPTS`` times a broker and read. Once right, a broker's client
keeps answering from it (librdkafka prefers the broker it used last). What this path costs: librdkafka asks for every
topic of the cluster, and its views carry no topic ids, so a re-created topic is judged by its partitions alone
(``_engine/visibility.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._metadata import ClusterMetadata

from throttled_admin._driver.librdkafka_log import tap_logs
from throttled_admin._driver.secret_hider import SecretHider
from throttled_admin._engine.visibility import BrokerViews, TopicView, topic_view

__all__ = ["LibrdkafkaViews", "answered_by"]

# The application's callbacks stay with the application's client; these clients only read Metadata.
_OWN_CALLBACKS = ("error_cb", "throttle_cb", "stats_cb")
_ATTEMPTS = 12  # fresh clients a broker: each is answered by another broker about half the time
_BOOTSTRAP = (-1, "bootstrap")  # the key of the client that lists the brokers


class _Silent:
    """A logger that drops every line."""

    def log(self, *args: Any) -> None:
        pass


class LibrdkafkaViews:
    def __init__(self, conf: dict[str, Any], hide: Callable[[str], str] | None = None) -> None:
        self._conf = {key: value for key, value in conf.items() if key not in _OWN_CALLBACKS}
        # their log lines to stderr with secrets hidden (``hide``, else conf's), taken at each read's end; never to a
        # logger from conf, which they never reached (never polled), and whose calls belong on the client's thread
        if self._conf.get("logger") is not None:
            self._conf["logger"] = _Silent()
        else:
            tap_logs(self._conf, lambda line: None, lambda job: job(), hide or SecretHider(conf).text)
        self._lock = threading.Lock()
        self._clients: dict[tuple[int, str], AdminClient] = {}
        self._closed = False
        self._reading = False  # a read is using the clients: close() leaves destroying them to it
        self._bootstrap = [a.strip() for a in str(conf.get("bootstrap.servers", "")).split(",") if a.strip()]
        self._brokers: dict[int, str] = {}  # the last list read: used when no bootstrap server answers

    def __repr__(self) -> str:
        return f"LibrdkafkaViews(bootstrap={self._bootstrap!r})"

    def set_sasl_credentials(self, username: str, password: str) -> None:
        """New SASL credentials for the clients made from now on and those kept."""
        with self._lock:
            self._conf.update({"sasl.username": username, "sasl.password": password})
            for client in self._clients.values():
                client.set_sasl_credentials(username, password)

    def read_cluster(self, names: list[str], timeout_s: float) -> BrokerViews:
        """Every broker's view of ``names``, the brokers listed by a bootstrap server (or the last list read)."""
        with self._lock:
            self._reading = True
        try:
            brokers, answer = self._list_brokers(timeout_s)
            self._brokers = brokers = brokers or self._brokers
            views: BrokerViews = {}
            if answer is not None:
                _take(views, answer, brokers, names)
            for node_id, address in sorted(brokers.items()):
                if node_id not in views:
                    views[node_id] = self._read_broker(node_id, address, names, timeout_s, views, brokers)
            self._forget_others(brokers)
            return {node_id: views[node_id] for node_id in sorted(brokers)}
        finally:
            self._end_read()

    def _list_brokers(self, timeout_s: float) -> tuple[dict[int, str], ClusterMetadata | None]:
        """The brokers, and the answer that listed them, which is also the view of the broker that gave it: with
        librdkafka, listing costs no request more than the views do."""
        with self._lock:
            key = next(iter(self._clients), _BOOTSTRAP)  # a broker's client once there is one
        client = self._client(*key)
        if client is None:
            return {}, None
        try:
            metadata = client.list_topics(timeout=timeout_s)
        except Exception:
            return {}, None
        finally:
            client.poll(0)  # (its log lines)
        brokers = {broker.id: f"{broker.host}:{broker.port}" for broker in metadata.brokers.values()}
        with self._lock:  # the bootstrap client becomes the client of the broker that answered
            answered = (metadata.orig_broker_id, brokers.get(metadata.orig_broker_id, ""))
            if key == _BOOTSTRAP and answered[1] and answered not in self._clients:
                self._clients[answered] = self._clients.pop(_BOOTSTRAP)
        return brokers, metadata

    def _end_read(self) -> None:
        with self._lock:
            self._reading = False
            leftover = list(self._clients.values()) if self._closed else []
            if self._closed:
                self._clients = {}
        for client in leftover:  # closed while this read used them
            client.__exit__(None, None, None)

    def _read_broker(
        self,
        node_id: int,
        address: str,
        names: list[str],
        timeout_s: float,
        views: BrokerViews,
        brokers: dict[int, str],
    ) -> dict[str, TopicView] | None:
        """This broker's view; an answer from another listed broker is that broker's view (``views``)."""
        for _ in range(_ATTEMPTS):
            client = self._client(node_id, address)
            if client is None:
                return None
            try:
                metadata = client.list_topics(timeout=timeout_s)
            except Exception:
                return None
            finally:
                client.poll(0)  # (its log lines)
            if answered_by(metadata, node_id, address):
                return _view(metadata, names)
            self._hand_over((node_id, address), _take(views, metadata, brokers, names))  # a fresh client next
        return None

    def _hand_over(self, key: tuple[int, str], answered: tuple[int, str] | None) -> None:
        """The client of ``key`` answered from another broker: it becomes that broker's client if that broker has
        none (librdkafka goes on asking the broker it used last), and is destroyed otherwise."""
        with self._lock:
            client = self._clients.pop(key, None)
            if client is not None and answered is not None and answered not in self._clients:
                self._clients[answered], client = client, None
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
                bootstrap = ",".join(self._bootstrap) if (node_id, address) == _BOOTSTRAP else address
                client = AdminClient({**self._conf, "bootstrap.servers": bootstrap})
                self._clients[(node_id, address)] = client
            return client

    def _forget_others(self, brokers: dict[int, str]) -> None:
        """Brokers no longer listed (or moved) lose their clients."""
        with self._lock:
            gone = [key for key in self._clients if key != _BOOTSTRAP and brokers.get(key[0]) != key[1]]
            clients = [self._clients.pop(key) for key in gone]
        for client in clients:
            client.__exit__(None, None, None)


def _take(
    views: BrokerViews, metadata: ClusterMetadata, brokers: dict[int, str], names: list[str]
) -> tuple[int, str] | None:
    """The listed broker that gave ``metadata``, its view recorded in ``views`` unless it has one; None when the
    answer came from no listed broker (a bootstrap address that is no broker's advertised one)."""
    for node_id, address in brokers.items():
        if answered_by(metadata, node_id, address):
            views.setdefault(node_id, _view(metadata, names))
            return node_id, address
    return None


def answered_by(metadata: ClusterMetadata, node_id: int, address: str) -> bool:
    """The answer came from that broker: its id, or its address (librdkafka's bootstrap broker has no id yet)."""
    if metadata.orig_broker_id == node_id:
        return True
    # librdkafka's name: "host:port/id" in plaintext, "sasl_ssl://host:port/bootstrap" with TLS or SASL
    name = str(metadata.orig_broker_name or "").rsplit("/", 1)[0]
    return name.rpartition("://")[2] == address


def _view(metadata: ClusterMetadata, names: list[str]) -> dict[str, TopicView]:
    view: dict[str, TopicView] = {}
    for name in names:
        topic = metadata.topics.get(name)
        if topic is None:
            continue
        error = topic.error
        if error is not None and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            continue  # not listed
        leaderless = frozenset(p.id for p in topic.partitions.values() if p.error is not None or p.leader < 0)
        # (librdkafka's metadata carries no topic id)
        view[name] = topic_view(len(topic.partitions), error is not None, None, leaderless)
    return view
