"""``AIOThrottledAdminClient``: the asyncio form of ``ThrottledAdminClient``, after ``confluent_kafka.aio``.

As ``AIOProducer.produce`` returns an ``asyncio.Future``, the three topic mutations return one per topic::

    async with AIOThrottledAdminClient({"bootstrap.servers": "..."}) as admin:
        futures = await admin.create_topics([NewTopic("orders", 6, 3)])
        await asyncio.gather(*futures.values())

It wraps one ``ThrottledAdminClient`` (same scheduler, retries, deadlines and metrics): the mutation calls
validate, queue and at most hand a request to librdkafka without waiting, so they never block the event loop, and
each throttle wait happens on the client's own thread. Each ``asyncio.Future`` is chained to its topic's future as
``asyncio.wrap_future`` would chain it (results reach the loop in batches, one ``call_soon_threadsafe`` per
batch), so cancelling it cancels the topic's future, whose ``cancel()`` withdraws the topic if it has not been sent
yet.

A call belongs to the task that made it: when that task is cancelled (``task.cancel()``, ``asyncio.timeout()``)
while it waits on any of the call's futures (itself, through ``gather`` or ``wait_for``; ``asyncio.wait`` cancels none
of them), or ends cancelled by a cancel requested after the call, every topic of the call not yet sent is withdrawn,
not only the one it was waiting on (a clean-up call made where the task caught a cancel stays). Cancelling one future
yourself withdraws that topic alone.

Every other AdminClient method is a coroutine that runs the synchronous method in an executor, as
``AIOConsumer`` does; the ``concurrent.futures.Future``s it returns come back as ``asyncio.Future``s.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import inspect
import logging
import sys
import threading
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, cast

from confluent_kafka import ConsumerGroupTopicPartitions, ElectionType, TopicCollection
from confluent_kafka.admin._acl import AclBinding, AclBindingFilter
from confluent_kafka.admin._config import ConfigResource
from confluent_kafka.admin._listoffsets import OffsetSpec
from confluent_kafka.admin._metadata import ClusterMetadata, GroupMetadata
from confluent_kafka.admin._scram import UserScramCredentialAlteration
from confluent_kafka.cimpl import NewPartitions, NewTopic, TopicPartition

from throttled_admin._client import ThrottledAdminClient
from throttled_admin._driver.futures import TopicFuture
from throttled_admin._driver.scheduler import USER_CODE_WAIT_S
from throttled_admin._options import CreatePartitionsOptions, CreateTopicsOptions, DeleteTopicsOptions

__all__ = ["AIOThrottledAdminClient"]

log = logging.getLogger("throttled_admin")

_CALLBACKS = ("error_cb", "throttle_cb", "stats_cb")


def _on_loop(loop: asyncio.AbstractEventLoop, name: str, callback: Callable[..., Any]) -> Callable[..., None]:
    """A coroutine-function callback run as a task on the event loop, never waited for: librdkafka's and the
    scheduler's threads must not wait on the loop (the loop may itself be waiting on them)."""

    def schedule(*args: Any) -> None:
        def start() -> None:
            task = loop.create_task(callback(*args))
            task.add_done_callback(functools.partial(_log_failure, name))

        try:
            loop.call_soon_threadsafe(start)
        except RuntimeError:  # the loop is closed: nobody is left to run it
            log.debug("%s dropped: its event loop is closed", name)

    return schedule


def _log_failure(name: str, task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("%s raised", name, exc_info=task.exception())


def _loop_conf(loop: asyncio.AbstractEventLoop, conf: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of conf whose coroutine-function callbacks run on the loop; plain callbacks are left as they are
    (they run on the client's thread, as with the synchronous client)."""
    out = dict(conf)
    for name in _CALLBACKS:
        callback = out.get(name)
        if callback is not None and inspect.iscoroutinefunction(callback):
            out[name] = _on_loop(loop, name, callback)
    return out


def _cancel_requests(task: asyncio.Task[Any] | None) -> int:
    """``task.cancelling()``: its cancel requests not yet taken back (0 before Python 3.11, or with no task)."""
    cancelling = getattr(task, "cancelling", None)  # Python 3.11+
    return cancelling() if cancelling is not None else 0


class _CallGroup:
    """The asyncio futures of one call, tied to the task that made it (see the module docstring), and chained to
    the call's topic futures: those settle on the client's thread, which hands them to the loop in batches (one
    ``call_soon_threadsafe`` per batch, not one per topic as ``asyncio.wrap_future`` would)."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any] | None, sources: dict[str, TopicFuture]
    ) -> None:
        self._loop = loop
        self._task = task
        self.futures = {name: _TopicAioFuture(loop, source, self) for name, source in sources.items()}
        self._pending = len(self.futures)
        self._cancelling = False
        # the task's cancel requests when the call was made: one it caught before (and did not ``uncancel()``) is not
        # this call's, as ``asyncio.timeout`` tells its own cancel from the count at its start
        self._cancels_before = _cancel_requests(task)
        self._lock = threading.Lock()
        self._settled: list[tuple[_TopicAioFuture, TopicFuture]] = []
        if task is not None:
            task.add_done_callback(self._task_done)
        for future in self.futures.values():
            future.source.add_settled_callback(functools.partial(self._on_settled, future))

    def _on_settled(self, future: _TopicAioFuture, source: concurrent.futures.Future[None]) -> None:
        # On the thread that settled the topic (the scheduler's, mostly): hand it over, never wait.
        with self._lock:
            first = not self._settled
            self._settled.append((future, future.source))
        if first:
            try:
                self._loop.call_soon_threadsafe(self._copy_settled)
            except RuntimeError:  # the loop is closed: nobody is left to await the futures
                log.debug("results dropped: their event loop is closed")

    def _copy_settled(self) -> None:
        with self._lock:
            settled, self._settled = self._settled, []
        for future, source in settled:
            if future.done():  # cancelled meanwhile
                continue
            if source.cancelled():
                future.cancel()
                continue
            exc = source.exception(0)
            if exc is None:
                future.set_result(None)
            else:
                future.set_exception(exc)
            self.one_done(future)

    def _task_cancelling(self) -> bool:
        """Whether the task that made the call is being cancelled: a cancel requested since the call, and this cancel
        not the task's own doing (asyncio cancels the future a task waits on from the canceller, or from a loop
        callback: ``asyncio.timeout``'s), unless the task is unwinding a cancel. The count alone misread a cancel the
        task caught after the call."""
        if _cancel_requests(self._task) <= self._cancels_before:
            return False
        if asyncio.current_task(self._loop) is not self._task:
            return True
        # the task's own, while it unwinds its cancel: 3.11's ``wait_for`` cancels the future it waited on so
        return isinstance(sys.exc_info()[1], asyncio.CancelledError)

    def one_done(self, future: asyncio.Future[None]) -> None:
        self._pending -= 1
        if future.cancelled() and self._task_cancelling():
            self.cancel()  # the task awaiting the call is being cancelled: withdraw all of it, not one topic
        if self._pending == 0 and self._task is not None:
            self._task.remove_done_callback(self._task_done)  # a long-lived task must not collect callbacks
            self._task = None

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        # (ended by a cancel requested before the call, re-raised after it: a clean-up call made in its handler stays)
        if task.cancelled() and (_cancel_requests(task) > self._cancels_before or not hasattr(task, "cancelling")):
            self.cancel()

    def cancel(self) -> None:
        if self._cancelling:  # each future's cancel() reports back here
            return
        self._cancelling = True
        try:
            for future in self.futures.values():
                future.cancel()
        finally:
            self._cancelling = False


class _TopicAioFuture(asyncio.Future[None]):
    """One topic's asyncio future: cancelling it cancels its topic future (which withdraws the topic if it has
    not been sent), as ``asyncio.wrap_future`` does."""

    def __init__(self, loop: asyncio.AbstractEventLoop, source: TopicFuture, group: _CallGroup) -> None:
        super().__init__(loop=loop)
        self.source = source
        self._group = group

    def cancel(self, msg: Any | None = None) -> bool:
        if not super().cancel(msg):
            return False
        self.source.cancel()
        self._group.one_done(self)
        return True


def _shut_down(executor: concurrent.futures.Executor, loop: asyncio.AbstractEventLoop) -> asyncio.Future[None]:
    """Done when ``executor``'s threads have ended, joined on a daemon thread of ours (never one of the loop's
    executor: ``asyncio.run`` waits for those as it ends, and a thread may be in a call that blocks for long)."""
    joined: asyncio.Future[None] = loop.create_future()

    def done() -> None:
        if not joined.done():
            joined.set_result(None)

    def join() -> None:
        executor.shutdown(wait=True)
        with contextlib.suppress(RuntimeError):  # (the loop closed meanwhile)
            loop.call_soon_threadsafe(done)

    threading.Thread(target=join, name="throttled-admin-close", daemon=True).start()
    return joined


class AIOThrottledAdminClient:
    """The asyncio ``ThrottledAdminClient``. ``conf`` and ``client_kwargs`` are ``ThrottledAdminClient``'s
    (``mutation_quota``, ``retry_on_quota_violation``, ``default_api_timeout_ms``, ``meter_provider``, ...).

    Create it inside a running event loop. ``error_cb``, ``throttle_cb`` and ``stats_cb`` in conf may be
    coroutine functions: they run as tasks on this loop and are never waited for.
    ``executor`` (or a pool of ``max_workers`` threads) runs the other AdminClient methods.
    """

    def __init__(
        self,
        conf: Mapping[str, Any],
        *,
        max_workers: int = 8,
        executor: concurrent.futures.Executor | None = None,
        **client_kwargs: Any,
    ) -> None:
        loop = asyncio.get_running_loop()
        client = ThrottledAdminClient(_loop_conf(loop, conf), **client_kwargs)
        self._setup(client, owns_client=True, max_workers=max_workers, executor=executor)

    @classmethod
    def wrap(
        cls,
        client: ThrottledAdminClient,
        *,
        max_workers: int = 8,
        executor: concurrent.futures.Executor | None = None,
    ) -> AIOThrottledAdminClient:
        """An asyncio face for an existing client, sharing its scheduler, quota and metrics with synchronous
        callers. ``close()`` then leaves the client open: whoever created it closes it."""
        if not isinstance(client, ThrottledAdminClient):
            raise TypeError(f"client must be a ThrottledAdminClient, got {type(client).__name__}")
        self = cls.__new__(cls)
        self._setup(client, owns_client=False, max_workers=max_workers, executor=executor)
        return self

    def _setup(
        self,
        client: ThrottledAdminClient,
        *,
        owns_client: bool,
        max_workers: int,
        executor: concurrent.futures.Executor | None,
    ) -> None:
        if executor is None:
            if isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1:
                raise ValueError(f"max_workers must be an int >= 1, got {max_workers!r}")
            executor = concurrent.futures.ThreadPoolExecutor(max_workers, thread_name_prefix="throttled-admin-aio")
            self._owns_executor = True
        else:
            self._owns_executor = False
        self._executor = executor
        self._client = client
        self._owns_client = owns_client
        self._closed = False
        self._close_done: concurrent.futures.Future[None] = concurrent.futures.Future()  # the first close() ended

    def __repr__(self) -> str:
        return f"AIOThrottledAdminClient({self._client!r})"

    @property
    def sync_client(self) -> ThrottledAdminClient:
        """The ThrottledAdminClient underneath (for synchronous callers sharing the same quota and metrics)."""
        return self._client

    @property
    def closed(self) -> bool:
        return self._closed or self._client.closed

    # -- the three quota-aware calls -------------------------------------------------------------

    async def create_topics(
        self, new_topics: list[NewTopic], *, options: CreateTopicsOptions | None = None, **kwargs: Any
    ) -> dict[str, asyncio.Future[None]]:
        """Create topics: one future per topic, resolved as with ``ThrottledAdminClient.create_topics``."""
        self._check_open()
        return self._wrap(self._client.create_topics(new_topics, options=options, **kwargs))

    async def create_partitions(
        self,
        new_partitions: list[NewPartitions],
        *,
        options: CreatePartitionsOptions | None = None,
        **kwargs: Any,
    ) -> dict[str, asyncio.Future[None]]:
        """Add partitions: one future per topic."""
        self._check_open()
        return self._wrap(self._client.create_partitions(new_partitions, options=options, **kwargs))

    async def delete_topics(
        self, topics: list[str], *, options: DeleteTopicsOptions | None = None, **kwargs: Any
    ) -> dict[str, asyncio.Future[None]]:
        """Delete topics: one future per topic."""
        self._check_open()
        return self._wrap(self._client.delete_topics(topics, options=options, **kwargs))

    def _wrap(self, futures: dict[str, concurrent.futures.Future[None]]) -> dict[str, asyncio.Future[None]]:
        sources = {name: cast(TopicFuture, future) for name, future in futures.items()}  # the client's own
        group = _CallGroup(asyncio.get_running_loop(), asyncio.current_task(), sources)
        return dict(group.futures)

    def metrics(self) -> dict[str, float]:
        """The client's metrics (``ThrottledAdminClient.metrics``): a snapshot, nothing to wait for."""
        return self._client.metrics()

    # -- lifecycle -------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("AIOThrottledAdminClient is closed")

    async def close(self) -> None:
        """Close the client (pending topics fail with KafkaError._DESTROY) and the executor, off the loop.
        Idempotent: a close() while another is under way (another task's, another loop's) returns once that one has
        ended. A client given to ``wrap()`` stays open."""
        if self._closed:
            await asyncio.shield(asyncio.wrap_future(self._close_done))
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        try:
            if self._owns_client:
                await loop.run_in_executor(None, self._client.close)
        finally:
            try:
                if self._owns_executor:  # its threads, within the budget: not a list_topics blocked in librdkafka
                    await asyncio.wait([_shut_down(self._executor, loop)], timeout=USER_CODE_WAIT_S)
            finally:
                self._close_done.set_result(None)

    async def __aenter__(self) -> AIOThrottledAdminClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- every other AdminClient method, in the executor -----------------------------------------
    # confluent-kafka's signatures, with its concurrent futures returned as asyncio futures.

    async def _run(self, method: str, *args: Any, **kwargs: Any) -> Any:
        self._check_open()
        loop = asyncio.get_running_loop()
        call = functools.partial(getattr(self._client, method), *args, **kwargs)
        return _asyncio_futures(await loop.run_in_executor(self._executor, call), loop)

    async def list_topics(self, *args: Any, **kwargs: Any) -> ClusterMetadata:
        result: ClusterMetadata = await self._run("list_topics", *args, **kwargs)
        return result

    async def list_groups(self, *args: Any, **kwargs: Any) -> list[GroupMetadata]:
        result: list[GroupMetadata] = await self._run("list_groups", *args, **kwargs)
        return result

    async def cluster_id(self, *args: Any, **kwargs: Any) -> str:
        result: str = await self._run("cluster_id", *args, **kwargs)
        return result

    async def poll(self, timeout: float = -1) -> int:
        result: int = await self._run("poll", timeout)
        return result

    async def set_sasl_credentials(self, username: str, password: str) -> None:
        await self._run("set_sasl_credentials", username, password)

    async def describe_configs(
        self, resources: list[ConfigResource], **kwargs: Any
    ) -> dict[ConfigResource, asyncio.Future[Any]]:
        result: dict[ConfigResource, asyncio.Future[Any]] = await self._run("describe_configs", resources, **kwargs)
        return result

    async def alter_configs(
        self, resources: list[ConfigResource], **kwargs: Any
    ) -> dict[ConfigResource, asyncio.Future[Any]]:
        result: dict[ConfigResource, asyncio.Future[Any]] = await self._run("alter_configs", resources, **kwargs)
        return result

    async def incremental_alter_configs(
        self, resources: list[ConfigResource], **kwargs: Any
    ) -> dict[ConfigResource, asyncio.Future[Any]]:
        result: dict[ConfigResource, asyncio.Future[Any]] = await self._run(
            "incremental_alter_configs", resources, **kwargs
        )
        return result

    async def create_acls(self, acls: list[AclBinding], **kwargs: Any) -> dict[AclBinding, asyncio.Future[Any]]:
        result: dict[AclBinding, asyncio.Future[Any]] = await self._run("create_acls", acls, **kwargs)
        return result

    async def describe_acls(self, acl_binding_filter: AclBindingFilter, **kwargs: Any) -> asyncio.Future[Any]:
        result: asyncio.Future[Any] = await self._run("describe_acls", acl_binding_filter, **kwargs)
        return result

    async def delete_acls(
        self, acl_binding_filters: list[AclBindingFilter], **kwargs: Any
    ) -> dict[AclBindingFilter, asyncio.Future[Any]]:
        result: dict[AclBindingFilter, asyncio.Future[Any]] = await self._run(
            "delete_acls", acl_binding_filters, **kwargs
        )
        return result

    async def list_consumer_groups(self, **kwargs: Any) -> asyncio.Future[Any]:
        result: asyncio.Future[Any] = await self._run("list_consumer_groups", **kwargs)
        return result

    async def describe_consumer_groups(self, group_ids: list[str], **kwargs: Any) -> dict[str, asyncio.Future[Any]]:
        result: dict[str, asyncio.Future[Any]] = await self._run("describe_consumer_groups", group_ids, **kwargs)
        return result

    async def describe_topics(self, topics: TopicCollection, **kwargs: Any) -> dict[str, asyncio.Future[Any]]:
        result: dict[str, asyncio.Future[Any]] = await self._run("describe_topics", topics, **kwargs)
        return result

    async def describe_cluster(self, **kwargs: Any) -> asyncio.Future[Any]:
        result: asyncio.Future[Any] = await self._run("describe_cluster", **kwargs)
        return result

    async def delete_consumer_groups(self, group_ids: list[str], **kwargs: Any) -> dict[str, asyncio.Future[Any]]:
        result: dict[str, asyncio.Future[Any]] = await self._run("delete_consumer_groups", group_ids, **kwargs)
        return result

    async def list_consumer_group_offsets(
        self, list_consumer_group_offsets_request: list[ConsumerGroupTopicPartitions], **kwargs: Any
    ) -> dict[str, asyncio.Future[Any]]:
        result: dict[str, asyncio.Future[Any]] = await self._run(
            "list_consumer_group_offsets", list_consumer_group_offsets_request, **kwargs
        )
        return result

    async def alter_consumer_group_offsets(
        self, alter_consumer_group_offsets_request: list[ConsumerGroupTopicPartitions], **kwargs: Any
    ) -> dict[str, asyncio.Future[Any]]:
        result: dict[str, asyncio.Future[Any]] = await self._run(
            "alter_consumer_group_offsets", alter_consumer_group_offsets_request, **kwargs
        )
        return result

    async def describe_user_scram_credentials(
        self, users: list[str] | None = None, **kwargs: Any
    ) -> asyncio.Future[Any] | dict[str, asyncio.Future[Any]]:
        result: asyncio.Future[Any] | dict[str, asyncio.Future[Any]] = await self._run(
            "describe_user_scram_credentials", users, **kwargs
        )
        return result

    async def alter_user_scram_credentials(
        self, alterations: list[UserScramCredentialAlteration], **kwargs: Any
    ) -> dict[str, asyncio.Future[Any]]:
        result: dict[str, asyncio.Future[Any]] = await self._run("alter_user_scram_credentials", alterations, **kwargs)
        return result

    async def list_offsets(
        self, topic_partition_offsets: dict[TopicPartition, OffsetSpec], **kwargs: Any
    ) -> dict[TopicPartition, asyncio.Future[Any]]:
        result: dict[TopicPartition, asyncio.Future[Any]] = await self._run(
            "list_offsets", topic_partition_offsets, **kwargs
        )
        return result

    async def delete_records(
        self, topic_partition_offsets: list[TopicPartition], **kwargs: Any
    ) -> dict[TopicPartition, asyncio.Future[Any]]:
        result: dict[TopicPartition, asyncio.Future[Any]] = await self._run(
            "delete_records", topic_partition_offsets, **kwargs
        )
        return result

    async def elect_leaders(
        self, election_type: ElectionType, partitions: list[TopicPartition] | None = None, **kwargs: Any
    ) -> asyncio.Future[Any]:
        result: asyncio.Future[Any] = await self._run("elect_leaders", election_type, partitions, **kwargs)
        return result


def _asyncio_futures(result: Any, loop: asyncio.AbstractEventLoop) -> Any:
    """confluent-kafka's futures (one, or a dict of them) as asyncio futures on ``loop``; anything else as is."""
    if isinstance(result, concurrent.futures.Future):
        return asyncio.wrap_future(result, loop=loop)
    if isinstance(result, dict) and result and all(isinstance(v, concurrent.futures.Future) for v in result.values()):
        return {key: asyncio.wrap_future(future, loop=loop) for key, future in result.items()}
    return result
