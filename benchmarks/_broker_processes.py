"""QuotaBrokers in processes of their own, so that a benchmark's figures measure the pipeline and not the
test broker sharing the pipeline's process (and its GIL).

Each broker runs in a ``spawn``-ed process and answers commands over a pipe: set a quota, hand over its
request log (principal, API name, ``received_at``; ``time.monotonic()`` is one clock for every process of
the machine), stop. The broker is all its process runs, so it owns the process's garbage collector
(``QuotaBroker(owns_process=True)``, as ``python -m throttled_admin.testing`` does): a mutation is handled with
it off. Benchmarks run as scripts, so this module is imported as ``_broker_processes``.
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.connection import Connection
from typing import Any, NamedTuple

__all__ = ["BrokerProcess", "Record"]


class Record(NamedTuple):
    """The fields of a ``RequestRecord`` the benchmarks read."""

    principal: str
    api_name: str
    received_at: float


def _serve(conn: Connection, kwargs: dict[str, Any]) -> None:
    from throttled_admin.testing import QuotaBroker

    with QuotaBroker(**{"owns_process": True, **kwargs}) as broker:
        conn.send(broker.bootstrap_servers)
        while True:
            command, argument = conn.recv()
            if command == "set_quota":
                broker.set_quota(**argument)
                conn.send(None)
            elif command == "log":
                conn.send([Record(r.principal, r.api_name, r.received_at) for r in broker.request_log()])
            else:
                conn.send(None)
                return


class BrokerProcess:
    """A QuotaBroker (any constructor keywords) in a process of its own, for a ``with`` block."""

    def __init__(self, **kwargs: Any) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, kwargs), daemon=True)
        self.bootstrap_servers = ""

    def __enter__(self) -> BrokerProcess:
        self._process.start()
        self.bootstrap_servers = self._conn.recv()
        return self

    def __exit__(self, *exc: object) -> None:
        self._call("stop", None)
        self._process.join(30)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def _call(self, command: str, argument: Any) -> Any:
        self._conn.send((command, argument))
        return self._conn.recv()

    def set_quota(self, **kwargs: Any) -> None:
        self._call("set_quota", kwargs)

    def request_log(self) -> list[Record]:
        result: list[Record] = self._call("log", None)
        return result
