"""QuotaBroker compiles kafka-python's codecs before it serves (issue 40): no first answer of a kind compiles one
while a client waits (DescribeQuorum v2's encoder, compiled on first use on the event loop, held the interpreter
lock against the controller thread's creates for 44 ms of a bulk call)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from kafka.protocol.schemas.fields.struct import StructField

from throttled_admin import NewTopic, ThrottledAdminClient
from throttled_admin.testing import QuotaBroker, _codecs

# In a fresh process (this one has compiled every codec already), counting kafka-python's compiles of generated codec
# source (file names "<codegen...>"): two brokers started at once from two threads, then a ThrottledAdminClient's first
# calls (ApiVersions, Metadata, DescribeQuorum, CreateTopics, DeleteTopics) served by one of them.
_SCRIPT = textwrap.dedent(
    """
    import builtins
    import json
    import threading
    from throttled_admin import NewTopic, ThrottledAdminClient
    from throttled_admin.testing import QuotaBroker

    compiled = []
    real_compile = builtins.compile

    def counting(source, filename, *args, **kwargs):
        if str(filename).startswith("<codegen"):
            compiled.append(filename)
        return real_compile(source, filename, *args, **kwargs)

    builtins.compile = counting
    brokers = [QuotaBroker(), QuotaBroker()]
    barrier = threading.Barrier(2)

    def start(broker):
        barrier.wait()
        broker.start()

    threads = [threading.Thread(target=start, args=(broker,)) for broker in brokers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    at_start, compiled[:] = list(compiled), []
    broker = brokers[0]
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers, "log_level": 0}) as admin:
        for future in admin.create_topics([NewTopic("t", 1, 1)], timeout_ms=30_000).values():
            future.result()
        for future in admin.delete_topics(["t"], timeout_ms=30_000).values():
            future.result()
        # an "already done" answer (t is gone) is told once DescribeQuorum is read: the baseline read of the client's
        # first call may not have gone by its close
        for future in admin.delete_topics(["t"], timeout_ms=30_000).values():
            future.exception()
    builtins.compile = real_compile
    served = {record.api_name for record in broker.request_log()}
    for broker in brokers:
        broker.stop()
    print(json.dumps([sorted(served), at_start, compiled]))
    """
)


def test_brokers_compile_each_codec_once_as_they_start_and_none_while_serving() -> None:
    """Compiled as the first brokers start, each codec once (two started at once from two threads: one compiles,
    the other waits, found by review), and none while a client's first calls are served."""
    run = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    served, at_start, compiled = json.loads(run.stdout.strip().splitlines()[-1])
    assert {"ApiVersions", "Metadata", "DescribeQuorum", "CreateTopics", "DeleteTopics"} <= set(served)
    assert "<codegen:describe_quorum_response_v2>" in at_start  # (the codegen's file names, as this test reads them)
    assert len(at_start) == len(set(at_start)), "a codec compiled twice"
    assert compiled == [], f"compiled while serving: {compiled}"


def test_a_codec_that_fails_to_compile_ahead_does_not_stop_the_broker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by review: compiling ahead is only an optimisation, but a codec that failed to compile (a kafka-python
    whose codegen changed, for a version no client sends) raised out of ``start()``, at every start."""
    real = StructField.compiled_encode_into

    def failing(self: Any, version: int, compact: bool = False, tagged: bool = False) -> Any:
        if self.name == "describe_quorum_response" and version == 0:
            raise NotImplementedError("codegen of this version changed")
        return real(self, version, compact=compact, tagged=tagged)

    monkeypatch.setattr(StructField, "compiled_encode_into", failing)
    monkeypatch.setattr(_codecs, "_compiled", False)  # (as in a fresh process)
    with QuotaBroker() as broker:
        conf = {"bootstrap.servers": broker.bootstrap_servers, "log_level": 0}
        with ThrottledAdminClient(conf) as admin:
            for future in admin.create_topics([NewTopic("t", 1, 1)], timeout_ms=30_000).values():
                future.result()
    assert _codecs._compiled
