"""QuotaBroker compiles kafka-python's codecs before it serves (issue 40): no first answer of a kind compiles one
while a client waits (DescribeQuorum v2's encoder, compiled on first use on the event loop, held the interpreter
lock against the controller thread's creates for 44 ms of a bulk call)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

# In a fresh process (this one has compiled every codec already): a broker started, then a ThrottledAdminClient's
# first call (ApiVersions, Metadata, DescribeQuorum, CreateTopics, DeleteTopics), counting kafka-python's compiles
# of generated codec source (file names "<codegen...>") while it is served.
_SCRIPT = textwrap.dedent(
    """
    import builtins
    import json
    from throttled_admin import NewTopic, ThrottledAdminClient
    from throttled_admin.testing import QuotaBroker

    compiled = []
    real_compile = builtins.compile

    def counting(source, filename, *args, **kwargs):
        if str(filename).startswith("<codegen"):
            compiled.append(filename)
        return real_compile(source, filename, *args, **kwargs)

    with QuotaBroker() as broker:
        builtins.compile = counting
        with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers, "log_level": 0}) as admin:
            for future in admin.create_topics([NewTopic("t", 1, 1)], timeout_ms=30_000).values():
                future.result()
            for future in admin.delete_topics(["t"], timeout_ms=30_000).values():
                future.result()
        builtins.compile = real_compile
        served = {record.api_name for record in broker.request_log()}
    print(json.dumps([sorted(served), compiled]))
    """
)


def test_a_broker_serves_a_clients_first_calls_without_compiling_a_codec() -> None:
    run = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    served, compiled = json.loads(run.stdout.strip().splitlines()[-1])
    assert {"ApiVersions", "Metadata", "DescribeQuorum", "CreateTopics", "DeleteTopics"} <= set(served)
    assert compiled == [], f"compiled while serving: {compiled}"
