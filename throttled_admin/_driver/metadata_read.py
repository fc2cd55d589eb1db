"""A metadata read that fails as fast and as truthfully as the client's mutations.

librdkafka never fails a request because authentication failed or no broker could be reached: it reports
the failure through ``error_cb`` and keeps reconnecting, so a blocking ``list_topics(timeout=...)`` waits
out its whole timeout and then says only "Broker transport failure". The Java Admin client fails calls at
once with the AuthenticationException. Here a ``ContactWatch`` (the client's ``error_cb`` and
``throttle_cb``) remembers what librdkafka reported, and ``read_metadata`` looks at it every 0.25 s while it
waits for a first answer: a wrong password ends it as soon as the broker refuses it (the SASL message, its code
kept), a listener the client found to speak the other protocol (TLS or not) as soon as it is found, and no broker
answering for ``FIRST_CONTACT_TIMEOUT_S`` while connection attempts fail before their handshake (librdkafka's
reports to ``error_cb``, read as the engine's ``contact`` does; a ThrottledAdminClient's own reading, which has its
log lines too: an ApiVersions request never answered) ends it with ``CannotConnectError``
"Metadata not sent: cannot connect to HOST:PORT (reason)", as the core does for mutations. A slow broker is
waited for: no timer of its own cuts a read short before the caller's ``timeout_s``.

``read_topics`` is the same read for named topics only (``describe_topics``: one Metadata request naming them),
so that a read costs the topics asked about, not every topic of the cluster (issue 29: a fleet's entities each
listed a cluster of 1,500 topics).

``read_failure`` words why a read failed the same way for every caller (the command line's ``apply``, the
provisioning executor): "cannot connect to ...", librdkafka's authentication message, or "cannot read the
cluster's topics: ...".
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from concurrent.futures import Future, wait
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import _AdminClientImpl

from throttled_admin._engine import FIRST_CONTACT_TIMEOUT_S, ContactFailure, contact_failure, is_broker_answer
from throttled_admin._errors import NotSentError, NotSentReason, cannot_connect_error, not_sent_error

__all__ = ["FATAL_CODES", "ContactWatch", "read_failure", "read_metadata", "read_topics"]

#: Errors after which no request of the client can succeed (librdkafka retries them forever).
FATAL_CODES = frozenset({KafkaError._AUTHENTICATION, KafkaError._SSL, KafkaError.SASL_AUTHENTICATION_FAILED})
#: A topic's errors that mean the cluster shows no such topic to this principal, as a listing would not list it.
_ABSENT = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.TOPIC_AUTHORIZATION_FAILED})
#: How often a read waiting for its first answer looks at the watch (a wrong password, no broker reachable).
_SLICE_S = 0.25
#: How long a read waits for a ThrottledAdminClient's first turn to send its contact probe (``_client_probe``).
_PROBE_SENT_WAIT_S = 1.0


class ContactWatch:
    """What librdkafka's callbacks say about a client's connections: the first fatal error (authentication,
    TLS) and, while no broker has answered, the last connection that failed before its handshake (or a listener
    found to speak the other protocol, which ThrottledAdminClient reports to ``error_cb`` too). Give
    ``on_error`` and ``on_throttle`` to the client as its ``error_cb`` and ``throttle_cb``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fatal: KafkaError | None = None
        self._failure: ContactFailure | None = None  # while no broker has answered
        self._reached = False
        self._brokers: int | None = None  # the brokers the first contact's DescribeCluster answer listed

    def on_error(self, error: KafkaError) -> None:
        # Runs on the client's callback thread.
        with self._lock:
            if error.code() in FATAL_CODES:
                if self._fatal is None:
                    self._fatal = error
                return
            failure = None if self._reached else contact_failure(error.str())
            known = self._failure
            if failure is not None and not (known is not None and known.definite and not failure.definite):
                self._failure = failure

    def on_throttle(self, event: Any) -> None:
        self.reached()

    def reached(self, brokers: int | None = None) -> None:
        """A broker has answered: no "cannot connect" from now on, and an earlier authentication failure is
        over (a connection authenticated since), so a later read is not failed by a stale one. ``brokers``: how
        many the answer listed, when it was DescribeCluster's (``brokers``)."""
        with self._lock:
            if brokers is not None:
                self._brokers = brokers
            self._reached = True
            self._failure = None
            self._fatal = None

    @property
    def has_reached(self) -> bool:
        """A broker has answered this client."""
        with self._lock:
            return self._reached

    @property
    def brokers(self) -> int | None:
        """How many brokers (live, unfenced) the cluster had at first contact, from the DescribeCluster answer
        ``read_metadata`` and ``read_topics`` wait for: None if none was read (the client had already been answered,
        or that answer was an error)."""
        with self._lock:
            return self._brokers

    @property
    def fatal(self) -> KafkaError | None:
        with self._lock:
            return self._fatal

    def check_fatal(self) -> None:
        """Raise the fatal error (a ``KafkaException`` with librdkafka's code and message) if there was one."""
        fatal = self.fatal
        if fatal is not None:
            raise KafkaException(fatal)

    def check_unreachable(
        self, since: float, operation: str = "Metadata", client: ContactFailure | None = None
    ) -> None:
        """No broker has answered since ``since`` (monotonic) for FIRST_CONTACT_TIMEOUT_S and connection attempts
        fail before their handshake, or the listener speaks the other protocol: raise ``CannotConnectError`` now
        (nothing was sent), not at the caller's timeout. ``client``: what the client itself read of its connections
        (a ThrottledAdminClient reads ``error_cb`` and librdkafka's log lines, where some failures are told only),
        taken before the watch's own when there is one."""
        with self._lock:
            if self._reached:
                return
            failure = client if client is not None else self._failure
        if failure is not None and (failure.definite or time.monotonic() - since >= FIRST_CONTACT_TIMEOUT_S):
            raise cannot_connect_error(operation, failure.address, failure.reason)

    def check_never_answered(self, timeout_s: float) -> None:
        """A read of ``timeout_s`` has timed out, and no broker has ever answered this client: raise ``NotSentError``
        (NO_BROKER_ANSWERED) saying so, as a mutation's deadline does (librdkafka writes nothing before its handshake
        is answered: a listener that accepts and never answers), not librdkafka's bare "Timed out"."""
        if not self.has_reached:
            reason, why = "no broker had answered this client", NotSentReason.NO_BROKER_ANSWERED
            raise not_sent_error("Metadata", round(timeout_s * 1000), reason, why=why) from None


def read_metadata(admin: AdminClient, watch: ContactWatch, timeout_s: float) -> Any:
    """The cluster's metadata (confluent-kafka's ClusterMetadata) within ``timeout_s``, with one Metadata request.

    Raises at once the watch's fatal error (e.g. SASL authentication failed), ``CannotConnectError`` after
    FIRST_CONTACT_TIMEOUT_S when no broker could be reached (with a ThrottledAdminClient, also a listener that
    accepts and never answers, once librdkafka's ApiVersions request to it times out: 10 s by default),
    ``NotSentError`` (NO_BROKER_ANSWERED) at ``timeout_s`` when none has answered this client (librdkafka writes
    nothing before its handshake is answered), else librdkafka's last error at ``timeout_s``.

    A blocking ``list_topics`` cannot be abandoned (destroying the client waits for it), and each call sends a
    Metadata request of its own, which a busy broker answers behind the ones before on the same connection: asked
    anew every 0.25 s, a slow cluster never answered one in time (the fleet benchmark's 200 clients failed their
    reads). So until a broker has answered this client, the read first waits for a ``describe_cluster`` (one
    request, a future: the watch is looked at every ``_SLICE_S`` meanwhile), and then asks for the metadata once."""
    started = time.monotonic()
    deadline = started + timeout_s
    _first_contact(admin, watch, started, deadline)
    try:
        metadata = admin.list_topics(timeout=max(0.05, deadline - time.monotonic()))
    except KafkaException:
        watch.check_fatal()
        _check_unreachable(admin, watch, started)
        watch.check_never_answered(timeout_s)
        raise
    watch.reached()
    return metadata


def read_topics(admin: AdminClient, watch: ContactWatch, names: Iterable[str], timeout_s: float) -> dict[str, Any]:
    """The topics among ``names`` that the cluster has (confluent-kafka's TopicDescription of each), with one
    Metadata request for those names only (``describe_topics``), failing as fast as ``read_metadata``.

    A name the cluster does not have, or does not let this principal describe, is absent from the answer, as a
    listing of every topic would leave it out; any other error of a topic fails the read (librdkafka's error, the
    watch's fatal one first). The request has one future (confluent-kafka's own, settled on librdkafka's thread),
    as the client's mutations do (``_Transport.send``): AdminClient's wrapper makes one more future per topic (21
    against 7 us of CPU per absent name on this machine), and ThrottledAdminClient's inherited method would hand
    each of those to its pool for done-callbacks, a thread for each future of a burst that finds none idle. The
    read returns once the request is settled (librdkafka settles it by its timeout), or raises what ``close()``
    follows."""
    started = time.monotonic()
    deadline = started + timeout_s
    _first_contact(admin, watch, started, deadline)
    wanted = sorted(set(names))
    if not wanted:
        return {}
    request: Future[list[Any]] = Future()
    request.set_running_or_notify_cancel()  # as AdminClient._create_future
    left = max(0.05, deadline - time.monotonic())
    # Names, then the future, as AdminClient.describe_topics calls it (confluent-kafka's stub has them swapped).
    _AdminClientImpl.describe_topics(admin, wanted, request, request_timeout=left)  # type: ignore[arg-type]
    _wait(admin, [request], watch, started, deadline)
    error = request.exception()
    if error is not None:
        watch.check_fatal()
        _check_unreachable(admin, watch, started)
        raise error
    topics: dict[str, Any] = {}
    for name, answer in zip(wanted, request.result(), strict=True):  # in the order asked
        if not isinstance(answer, KafkaError):
            topics[name] = answer
        elif answer.code() not in _ABSENT:
            watch.check_fatal()
            raise KafkaException(answer)
    watch.reached()
    return topics


def _first_contact(admin: AdminClient, watch: ContactWatch, started: float, deadline: float) -> None:
    """Until a broker has answered this client: wait for a ``describe_cluster`` while looking at the watch (a
    ThrottledAdminClient's own first contact probe, unless it failed: one request fewer)."""
    if watch.has_reached:
        return
    probe = _client_probe(admin, deadline)
    if probe is not None and _answered(admin, probe, watch, started, deadline):
        return
    # (the client's probe ended unanswered, its librdkafka timeout counted from the client's start: this read's own,
    # which waits until the first-contact limit counted from the read's start)
    if not _answered(
        admin, admin.describe_cluster(request_timeout=max(0.05, deadline - started)), watch, started, deadline
    ):
        _check_unreachable(admin, watch, started)


def _answered(admin: AdminClient, probe: Future[Any], watch: ContactWatch, started: float, deadline: float) -> bool:
    """Wait for a DescribeCluster while looking at the watch: True if a broker answered it (the watch then counts
    the brokers it listed)."""
    _wait(admin, [probe], watch, started, deadline)
    watch.check_fatal()
    if is_broker_answer(exc := probe.exception()):
        watch.reached(None if exc is not None else len(probe.result().nodes))
        return True
    return False


def _client_probe(admin: AdminClient, deadline: float) -> Future[Any] | None:
    """The DescribeCluster a ThrottledAdminClient sends as it starts (``Scheduler.first_probe``), waited for to be
    sent ``_PROBE_SENT_WAIT_S`` at most; None for another client, or when it was not sent (a read then asks for
    itself, as it does when the probe ends unanswered)."""
    first_probe = getattr(admin, "_first_probe", None)
    if first_probe is None:
        return None
    probe: Future[Any] | None = first_probe(max(0.0, min(_PROBE_SENT_WAIT_S, deadline - time.monotonic())))
    return probe


def _wait(admin: AdminClient, futures: list[Future[Any]], watch: ContactWatch, started: float, deadline: float) -> None:
    """Until every future is settled, looking at the watch every ``_SLICE_S``; librdkafka's timeout at the
    deadline."""
    while not all(future.done() for future in futures):
        watch.check_fatal()
        _check_unreachable(admin, watch, started)
        if time.monotonic() >= deadline:
            watch.check_never_answered(deadline - started)
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "Failed to get metadata: Local: Timed out"))
        wait(futures, timeout=_SLICE_S)


def _check_unreachable(admin: AdminClient, watch: ContactWatch, started: float) -> None:
    """``ContactWatch.check_unreachable`` with what a ThrottledAdminClient read of its own connections
    (``_contact_failure``: an ApiVersions request never answered is told only in librdkafka's log, which the client
    reads and the watch does not)."""
    client_failure = getattr(admin, "_contact_failure", None)
    failure = None if client_failure is None else client_failure()
    watch.check_unreachable(started, client=failure if isinstance(failure, ContactFailure) else None)


def read_failure(exc: BaseException) -> tuple[int | None, str]:
    """Why a read of the cluster failed before anything was sent, with Kafka's (librdkafka's) error code: no broker
    reachable ("cannot connect to HOST:PORT (reason)"), none answering ("no broker had answered this client within
    N ms"), an authentication failure (librdkafka's message), or anything else ("cannot read the cluster's topics: "
    and the error)."""
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    if not isinstance(error, KafkaError):
        return None, f"cannot read the cluster's topics: {type(exc).__name__}: {exc}"
    code, message = int(error.code()), str(error.str())
    if isinstance(exc, NotSentError):
        if exc.why is NotSentReason.NO_BROKER_ANSWERED:
            return code, f"{exc.reason} within {exc.timeout_ms} ms"
        return code, message.split(" not sent: ", 1)[-1]
    if code in FATAL_CODES:
        return code, message
    return code, f"cannot read the cluster's topics: {message}"
