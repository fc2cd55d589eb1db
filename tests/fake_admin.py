"""A scripted stand-in for the scheduler's transport (confluent-kafka's AdminClient), for unit tests of the
client's branches.

Each mutation call consumes one step of the script: per-topic error codes (0 = success), an optional
throttle (delivered through the conf's throttle_cb on the next poll, as librdkafka does), or HANG to leave
the futures pending forever."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, ClassVar

from confluent_kafka import KafkaError, KafkaException

HANG = "hang"


@dataclass
class Step:
    codes: dict[str, int] | str = field(default_factory=dict)  # topic -> error code, or HANG
    throttle_s: float = 0.0
    node_id: int = 1


@dataclass
class Event:
    broker_name: str
    broker_id: int
    throttle_time: float


@dataclass
class Sent:
    operation: str
    topics: list[str]
    kwargs: dict[str, Any]
    at: float


class FakeAdmin:
    instances: ClassVar[list[FakeAdmin]] = []

    def __init__(self, conf: dict[str, Any]):
        self.conf = conf
        self.script: deque[Step] = deque()
        self.sent: list[Sent] = []
        self.events: deque[Event] = deque()
        self.lock = threading.Lock()
        self.delegated: list[str] = []
        self.partitions: dict[str, int] = {}
        FakeAdmin.instances.append(self)

    def _call(self, operation: str, topics: list[str], kwargs: dict[str, Any]) -> dict[str, Future[None]]:
        with self.lock:
            self.sent.append(Sent(operation, topics, kwargs, time.monotonic()))
            step = self.script.popleft() if self.script else Step()
            if step.throttle_s > 0:
                self.events.append(Event(f"b{step.node_id}", step.node_id, step.throttle_s))
        futures: dict[str, Future[None]] = {name: Future() for name in topics}
        if step.codes == HANG:
            return futures
        for name, future in futures.items():
            code = step.codes.get(name, 0) if isinstance(step.codes, dict) else 0
            if code:
                future.set_exception(KafkaException(KafkaError(code)))
            else:
                future.set_result(None)
        return futures

    def create_topics(self, new_topics: list[Any], **kwargs: Any) -> dict[str, Future[None]]:
        return self._call("create_topics", [t.topic for t in new_topics], kwargs)

    def create_partitions(self, new_partitions: list[Any], **kwargs: Any) -> dict[str, Future[None]]:
        return self._call("create_partitions", [p.topic for p in new_partitions], kwargs)

    def delete_topics(self, topics: list[str], **kwargs: Any) -> dict[str, Future[None]]:
        return self._call("delete_topics", list(topics), kwargs)

    # -- the scheduler's Transport -----------------------------------------------------------------

    def send(self, method: str, items: list[Any], kwargs: dict[str, Any], on_answer: Callable[[Any], None]) -> None:
        futures: dict[str, Future[None]] = getattr(self, method)(items, **kwargs)
        answered = {name: future.exception() for name, future in futures.items() if future.done()}
        if answered:  # a HANG step answers nothing
            on_answer(answered)

    def partition_counts(self, timeout_s: float) -> dict[str, int]:
        return dict(self.partitions)

    def probe(self, timeout_s: float) -> Future[None]:
        """The contact probe: answered at once (the scripted cluster is always reachable)."""
        future: Future[None] = Future()
        future.set_result(None)
        return future

    def poll(self, timeout: float = -1) -> int:
        served = 0
        while True:
            with self.lock:
                if not self.events:
                    return served
                event = self.events.popleft()
            self.conf["throttle_cb"](event)
            served += 1

    def list_topics(self, *args: Any, **kwargs: Any) -> str:
        self.delegated.append("list_topics")
        return "metadata"


def install(mocker: Any) -> None:
    """Give every ThrottledAdminClient created from now on a FakeAdmin as its scheduler's transport. The fake
    serves the client's own conf callbacks (throttle_cb and error_cb as ``install_callbacks`` made them)."""
    import throttled_admin._client

    FakeAdmin.instances.clear()
    confs: list[dict[str, Any]] = []
    real = throttled_admin._client.install_callbacks

    def capture(conf: dict[str, Any], sink: Any, run_user: Any) -> tuple[dict[str, Any], Any]:
        owned, report = real(conf, sink, run_user)
        confs.append(owned)
        return owned, report

    mocker.patch("throttled_admin._client.install_callbacks", capture)
    mocker.patch("throttled_admin._client._Transport", side_effect=lambda client: FakeAdmin(confs[-1]))
