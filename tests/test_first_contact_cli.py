"""First contact on the command line and in the provisioning API (issue 28 findings 2 and 3): `topics`, `apply`
(its text and its JSON) and ``apply_plan``'s rows say "cannot connect to HOST:PORT (reason)" on every protocol, and
name a TLS/plaintext mismatch either way round; a cluster whose read fails another way says "cannot read the
cluster's topics" everywhere (docs/pipeline.md). As subprocesses, against QuotaBroker and its TLS listener.

Times are printed (``pytest -s``), never asserted: each command's timeout is far beyond the time its diagnosis
takes, so a diagnosis that waited for the timeout fails the assertion on what was printed.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import ssl
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli_helpers import Run, run_cli, topics
from tests.support import BrokerFactory
from throttled_admin.provisioning import PlanRow, apply_plan

pytestmark = pytest.mark.slow

PASSWORD = "Pw-first-contact-cli-93a"
CREATE = ("--create", "--topic", "x", "--partitions", "1", "--timeout-ms", "120000")


def settings(protocol: str, ca: Path | None = None) -> dict[str, Any]:
    conf: dict[str, Any] = {"security.protocol": protocol}
    if protocol.startswith("SASL_"):
        conf.update({"sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": PASSWORD})
    if protocol.endswith("SSL") and ca is not None:
        conf["ssl.ca.location"] = str(ca)
    return conf


def command_config(path: Path, protocol: str, ca: Path | None = None) -> str:
    path.write_text("".join(f"{key}={value}\n" for key, value in settings(protocol, ca).items()))
    return str(path)


def apply_json(tmp_path: Path, address: str, conf: dict[str, Any], request_timeout_s: float = 120) -> Run:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps([{"cluster": "dev", "action": "create", "topic": f"t{i}"} for i in range(2)]))
    profiles = tmp_path / "profiles.yaml"
    profile = {"bootstrap.servers": address, "request_timeout_s": request_timeout_s, **conf}
    profiles.write_text(yaml.safe_dump({"dev": profile}))
    return run_cli("apply", str(plan), "--profiles", str(profiles), "--output", "json", timeout_s=300)


def rows_and_summary(run: Run) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    *rows, summary = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    return rows, summary


def report(what: str, run: Run) -> None:
    print(f"[timing] {what}: {run.elapsed_s:.2f} s, exit {run.returncode}")


def expect_everywhere(run_topics: list[Run], run_apply: Run, rows: list[Any], reason: str) -> None:
    """``reason`` ("cannot connect to HOST:PORT (...)") in `topics`' error, in every `apply` row (text of the JSON
    and the summary) and every ``apply_plan`` row."""
    for run in run_topics:
        assert run.returncode == 1, run.output
        assert "Error while executing topic command : " in run.stdout, run.output
        assert reason in run.stdout, run.stdout
    records, summary = rows_and_summary(run_apply)
    assert [r["error_message"] for r in records] == [f"not sent: {reason}"] * len(records), records
    assert summary["connection_problems"] == {"dev": reason}, summary
    assert [r.error_message for r in rows] == [f"not sent: {reason}"] * len(rows), rows


# -- issue 28, finding 2 ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SSL"])
def test_cannot_connect_names_host_and_port_in_topics_apply_and_its_rows(
    tmp_path: Path, protocol: str, refused_address: str
) -> None:
    address = refused_address
    config = command_config(tmp_path / "client.properties", protocol)
    # The four wait out the same few seconds of diagnosis: side by side, not one after another.
    with ThreadPoolExecutor(4) as pool:
        running = [
            pool.submit(topics, address, "--command-config", config, *action) for action in (CREATE, ("--list",))
        ]
        applying = pool.submit(apply_json, tmp_path, address, settings(protocol))
        profiles = {"dev": {"bootstrap.servers": address, **settings(protocol)}}
        rows = apply_plan([PlanRow("dev", "create", "t0")], profiles)
        runs, run_apply = [run.result() for run in running], applying.result()
    for run in [*runs, run_apply]:
        report(f"refused, {protocol}", run)
        assert f"{protocol.lower()}:" not in run.output, run.output
    reason = f"cannot connect to {address} (Connect to ipv4#{address} failed: Connection refused)"
    expect_everywhere(runs, run_apply, rows, reason)


# -- issue 28, finding 3 ------------------------------------------------------------------------------------------


def test_a_tls_client_on_a_plaintext_listener_is_told_so_in_topics_apply_and_its_rows(
    quota_broker: BrokerFactory, tls: tuple[ssl.SSLContext, Path], tmp_path: Path
) -> None:
    broker = quota_broker()
    address = broker.bootstrap_servers
    config = command_config(tmp_path / "client.properties", "SSL", tls[1])
    runs = [topics(address, "--command-config", config, *action) for action in (CREATE, ("--list",))]
    run_apply = apply_json(tmp_path, address, settings("SSL", tls[1]))
    rows = apply_plan(
        [PlanRow("dev", "create", "t0")], {"dev": {"bootstrap.servers": address, **settings("SSL", tls[1])}}
    )
    for run in [*runs, run_apply]:
        report("SSL client, plaintext listener", run)
    why = f"the listener at {address} does not speak TLS; check security.protocol, which is SSL"
    reason = f"cannot connect to {address} ({why})"
    expect_everywhere(runs, run_apply, rows, reason)
    assert broker.topics() == {}


def test_a_plaintext_client_on_a_tls_listener_is_told_so_in_topics_apply_and_its_rows(
    quota_broker: BrokerFactory, tls: tuple[ssl.SSLContext, Path], tmp_path: Path
) -> None:
    broker = quota_broker(ssl_context=tls[0])
    address = broker.bootstrap_servers
    runs = [topics(address, *action) for action in (CREATE, ("--list",))]
    run_apply = apply_json(tmp_path, address, {})
    rows = apply_plan([PlanRow("dev", "create", "t0")], {"dev": {"bootstrap.servers": address}})
    for run in [*runs, run_apply]:
        report("PLAINTEXT client, TLS listener", run)
    why = f"the listener at {address} requires TLS; check security.protocol, which is PLAINTEXT"
    reason = f"cannot connect to {address} ({why})"
    expect_everywhere(runs, run_apply, rows, reason)
    assert broker.request_log() == []


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_a_sasl_client_on_a_listener_without_sasl_is_told_so_in_topics_apply_and_its_rows(
    quota_broker: BrokerFactory, tls: tuple[ssl.SSLContext, Path], tmp_path: Path, protocol: str
) -> None:
    """librdkafka's own words: "SASL PLAIN mechanism handshake failed: Broker: Request not valid in current SASL
    state: broker's supported mechanisms: " (none)."""
    broker = quota_broker(ssl_context=tls[0] if protocol == "SASL_SSL" else None)
    address = broker.bootstrap_servers
    config = command_config(tmp_path / "client.properties", protocol, tls[1])
    runs = [topics(address, "--command-config", config, *action) for action in (CREATE, ("--list",))]
    run_apply = apply_json(tmp_path, address, settings(protocol, tls[1]))
    rows = apply_plan(
        [PlanRow("dev", "create", "t0")], {"dev": {"bootstrap.servers": address, **settings(protocol, tls[1])}}
    )
    for run in [*runs, run_apply]:
        report(f"{protocol} client, listener without SASL", run)
        assert PASSWORD not in run.output
    fits = "PLAINTEXT" if protocol == "SASL_PLAINTEXT" else "SSL"
    reason = (
        f"{protocol.lower()}://{address}/bootstrap: the listener at {address} does not use SASL; check "
        f"security.protocol, which is {protocol} ({fits} for this listener). librdkafka: SASL PLAIN mechanism "
        "handshake failed: Broker: Request not valid in current SASL state: broker's supported mechanisms:  (after "
    )  # (then how long it took, which varies)
    for run in runs:
        assert run.returncode == 1, run.output
        assert f"Error while executing topic command : {reason}" in run.stdout, run.output
    records, summary = rows_and_summary(run_apply)
    told = [*(r["error_message"] for r in records), *(r.error_message for r in rows)]
    assert all(message.startswith(f"not sent: {reason}") for message in told), told
    assert summary["connection_problems"]["dev"].startswith(reason), summary
    assert broker.topics() == {}


def test_a_cluster_that_never_answers_says_no_broker_answered_in_apply_and_its_rows(
    quota_broker: BrokerFactory, tmp_path: Path
) -> None:
    """docs/pipeline.md: "not sent: no broker had answered this client within N ms" for a listener that accepts and
    never answers, with a profile's request_timeout_s of 3 s (a new user's run, helper 99: it said "cannot read the
    cluster's topics: Failed to get metadata: Local: Timed out", which names no cause). librdkafka writes nothing
    before its handshake is answered: the listener receives only ApiVersions."""
    broker = quota_broker()
    broker.set_unresponsive()
    address = broker.bootstrap_servers
    run_apply = apply_json(tmp_path, address, {}, request_timeout_s=3)
    profile = {"bootstrap.servers": address, "request_timeout_s": 3}
    rows = apply_plan([PlanRow("dev", "create", "t0")], {"dev": profile})
    report("apply, nothing answers", run_apply)
    records, summary = rows_and_summary(run_apply)
    for message in [*(r["error_message"] for r in records), *(r.error_message for r in rows)]:
        assert message == "not sent: no broker had answered this client within 3000 ms", message
    assert {r["error_name"] for r in records} == {"_TIMED_OUT"}, records
    assert summary["connection_problems"]["dev"] == "no broker had answered this client within 3000 ms", summary
    assert {r.api_name for r in broker.request_log()} == {"ApiVersions"}


@contextlib.contextmanager
def web_listener() -> Iterator[str]:
    """A listener that answers whatever it reads as a web server does, "HTTP/1.1 400 Bad Request", and closes the
    connection: a web port given as bootstrap.servers. Its address; stopped at the end."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:  # shut down
                return
            with conn, contextlib.suppress(OSError):  # (the client went away, or sent nothing in 5 s)
                conn.settimeout(5)
                if conn.recv(4096):
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        server.shutdown(socket.SHUT_RDWR)  # (wakes the accept; a close alone does not on Linux)
        server.close()
        thread.join(5)


def test_a_web_port_says_the_listener_does_not_speak_kafka_in_topics_apply_and_its_rows(tmp_path: Path) -> None:
    """Found by a new user's run: librdkafka's "Invalid response size 1213486160 ...: increase
    receive.message.max.bytes" (the bytes 'HTTP' read as a size) advised a setting that cannot help."""
    with web_listener() as address, ThreadPoolExecutor(3) as pool:
        running = [pool.submit(topics, address, *action) for action in (CREATE, ("--list",))]
        applying = pool.submit(apply_json, tmp_path, address, {})
        rows = apply_plan([PlanRow("dev", "create", "t0")], {"dev": {"bootstrap.servers": address}})
        runs, run_apply = [run.result() for run in running], applying.result()
    for run in [*runs, run_apply]:
        report("a web port", run)
        assert "receive.message.max.bytes" not in run.output, run.output
    why = f"the listener at {address} does not speak Kafka's protocol: its answer began with 'HTTP'"
    expect_everywhere(runs, run_apply, rows, f"cannot connect to {address} ({why})")


def test_a_silent_listener_is_said_as_one_by_a_create_of_the_default_partition_count_and_by_a_listing(
    quota_broker: BrokerFactory,
) -> None:
    """Found by a new user's run: `--create` without `--partitions` on a listener that never answers printed the
    library's warning "could not read the cluster's metadata (...); costs not known are taken as 1" on stderr above
    the command's own error. Before any broker has answered, that read's failure is the calls' to tell.

    And `--list` on the same listener waited out its whole --timeout-ms and said "no broker had answered", where
    `--create` says the handshake was not answered (librdkafka tells an ApiVersions timeout only in a log line, which
    the client reads and a read's ``ContactWatch`` did not): both say the same, long before the timeout, and so do a
    plan's rows (docs/pipeline.md), whose group reads the cluster first."""
    broker = quota_broker()
    broker.set_unresponsive()
    address = broker.bootstrap_servers
    with ThreadPoolExecutor(2) as pool:
        creating = pool.submit(topics, address, "--create", "--topic", "x", "--timeout-ms", "120000")
        listing = pool.submit(topics, address, "--list", "--timeout-ms", "60000")
        rows = apply_plan(
            [PlanRow("dev", "create", "t0")], {"dev": {"bootstrap.servers": address, "request_timeout_s": 60}}
        )
        run, run_list = creating.result(), listing.result()
    report("create -1 partitions, nothing answers", run)
    report("list, nothing answers", run_list)
    why = f"cannot connect to {address} (the listener at {address} did not answer the Kafka handshake (ApiVersions)"
    for each in (run, run_list):
        assert each.returncode == 1, each.output
        assert why in each.stdout, each.output
        assert each.stderr == "", each.stderr
    assert [(r.status, str(r.error_message).startswith(f"not sent: {why}")) for r in rows] == [("failed", True)], rows


def test_apply_timeout_bounds_the_first_read_of_a_cluster_that_never_answers(
    quota_broker: BrokerFactory, tmp_path: Path
) -> None:
    """Found by a new user's run (helper 104): `apply --timeout 3` (each group's budget) on a listener that never
    answers took 10.6 s, its reads waiting the profile's request_timeout_s; ``apply_plan(timeout_s=3)`` alike. The
    reads wait within the budget: 'no broker had answered this client within 3000 ms'."""
    broker = quota_broker()
    broker.set_unresponsive()
    address = broker.bootstrap_servers
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps([{"cluster": "dev", "action": "create", "topic": "t0"}]))
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(
            run_cli, "apply", str(plan), "--bootstrap-server", address, "--timeout", "3", "--output", "json"
        )
        rows = apply_plan([PlanRow("dev", "create", "t0")], {"dev": {"bootstrap.servers": address}}, timeout_s=3)
        run = running.result()
    report("apply --timeout 3, nothing answers", run)
    records, summary = rows_and_summary(run)
    why = "no broker had answered this client within 3000 ms"
    assert [r["error_message"] for r in records] == [f"not sent: {why}"], records
    assert summary["connection_problems"] == {"dev": why}, summary
    # (the budget's own read: what is left of the 3 s when it starts)
    [told] = [r.error_message for r in rows]
    assert re.fullmatch(r"not sent: no broker had answered this client within (2\d\d\d|3000) ms", str(told)), rows
