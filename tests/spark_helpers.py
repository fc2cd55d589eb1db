"""Spark processes for the tests: pyspark's own launchers (bin/spark-submit, bin/spark-class), bound to
127.0.0.1 on free ports, logging into files the tests read, stopped by the tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support import REPO, port_open, wait_until


def spark_bin(name: str) -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent / "bin" / name


#: What a Spark Connect client sets in os.environ (and pyspark then reads to pick Connect over classic).
CONNECT_ENV = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE", "SPARK_API_MODE")


def spark_env(**extra: str) -> dict[str, str]:
    """This interpreter for Python workers, this worktree importable by them, loopback only, classic mode."""
    path = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    bin_dir = str(Path(sys.executable).parent)
    return {
        **{key: value for key, value in os.environ.items() if key not in CONNECT_ENV},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONPATH": path,
        "SPARK_LOCAL_IP": "127.0.0.1",
        **extra,
    }


@contextmanager
def spark_process(command: list[str], log: Path, port: int, env: dict[str, str], what: str) -> Iterator[None]:
    """Run ``command`` (its own process group) until the block ends; ready once ``port`` accepts."""
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            if not wait_until(lambda: port_open(port) or proc.poll() is not None, timeout_s=120):
                raise RuntimeError(f"{what} did not listen on {port} within 120 s")
            if proc.poll() is not None:
                raise RuntimeError(f"{what} exited with {proc.returncode}: {log.read_text()[-3000:]}")
            yield
        finally:
            stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process's own group (the JVM and what it started), SIGKILL if it lingers."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def east_and_west(quota_broker: Callable[..., Any], password: str) -> tuple[Any, Any, dict[str, dict[str, Any]]]:
    """Two clusters at 50 mutations/s: east plain, west with SASL (user alice, ``password``) holding a topic
    "legacy" to delete; and their profiles as profiles.yaml has them."""
    east = quota_broker(controller_mutation_rate=50)
    west = quota_broker(users={"alice": password})
    west.set_quota(user="alice", controller_mutation_rate=50)
    west.create_topic("legacy", 2)
    profiles: dict[str, dict[str, Any]] = {
        "east": {"bootstrap.servers": east.bootstrap_servers, "mutation_rate": 50},
        "west": {
            "bootstrap.servers": west.bootstrap_servers,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN",
            "sasl.username": "alice",
            "sasl.password": password,
            "mutation_rate": 50,
        },
    }
    return east, west, profiles


#: The result columns that depend on what happened, not on when: equal between two runs of one plan.
OUTCOME = ("cluster", "topic", "action", "status", "error_code", "error_message", "attempts", "mutations", "detail")


def outcomes(results: Any) -> list[tuple[Any, ...]]:
    """The result rows' outcome columns, sorted (the two modes return rows in different orders)."""
    return sorted((tuple(row[name] for name in OUTCOME) for row in results.collect()), key=repr)


def both_modes_agree(spark: Any, quota_broker: Callable[..., Any], password: str) -> list[tuple[Any, ...]]:
    """A two-cluster plan (east plain, west SASL) applied with ``execution="executors"`` on one pair of
    clusters and ``"driver"`` on another: the same rows, the clusters as planned, and a rerun in either mode
    all ``unchanged`` (but the row naming no profile). Returns the rows."""
    from throttled_admin.provisioning import PlanRow
    from throttled_admin.spark import apply_plan, plan_dataframe

    rows = [PlanRow("east", "ensure", f"e.{i:02d}", 3, configs={"cleanup.policy": "compact, delete"}) for i in range(8)]
    rows += [PlanRow("west", "create", f"w.{i:02d}", 2) for i in range(8)]
    rows += [PlanRow("west", "delete", "legacy"), PlanRow("nowhere", "ensure", "x", 1)]
    rows += [PlanRow("east", "ensure", "zero", 0)]
    df = plan_dataframe(spark, rows, num_partitions=2)
    seen = {}
    for mode in ("executors", "driver"):
        east, west, profiles = east_and_west(quota_broker, password)
        profiles["east"]["request_timeout_s"] = 5
        first = outcomes(apply_plan(df, profiles, allow_delete=True, execution=mode))
        assert east.topics() == {f"e.{i:02d}": 3 for i in range(8)}, mode
        assert west.topics() == {f"w.{i:02d}": 2 for i in range(8)}, mode
        assert password not in repr(first)
        for again in ("executors", "driver"):
            rerun = outcomes(apply_plan(df, profiles, allow_delete=True, execution=again))
            statuses = {(row[0], row[1]): row[3] for row in rerun}
            assert {k: v for k, v in statuses.items() if v != "unchanged"} == {
                ("nowhere", "x"): "failed",
                ("east", "zero"): "failed",
            }, (mode, again)
        seen[mode] = first
    assert seen["executors"] == seen["driver"]
    statuses = {(row[0], row[1]): row[3] for row in seen["driver"]}
    assert {k: v for k, v in statuses.items() if v != "created"} == {
        ("west", "legacy"): "deleted",
        ("nowhere", "x"): "failed",
        ("east", "zero"): "failed",
    }
    return seen["driver"]


_SHIM = r"""
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>

/* connect() to port $REFUSED_PORT fails with ECONNREFUSED, as from behind an egress firewall; the rest
   goes to libc. */
int connect(int fd, const struct sockaddr *addr, socklen_t len) {
    static int (*real)(int, const struct sockaddr *, socklen_t);
    if (!real) real = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "connect");
    const char *refused = getenv("REFUSED_PORT");
    if (refused && addr) {
        int port = -1;
        if (addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in))
            port = ntohs(((const struct sockaddr_in *)addr)->sin_port);
        if (addr->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6))
            port = ntohs(((const struct sockaddr_in6 *)addr)->sin6_port);
        if (port == atoi(refused)) {
            errno = ECONNREFUSED;
            return -1;
        }
    }
    return real(fd, addr, len);
}
"""


def refusing_shim(directory: Path) -> Path:
    """An LD_PRELOAD library (compiled here with gcc) that refuses connect() to the port in $REFUSED_PORT."""
    source = directory / "refuse_connect.c"
    library = directory / "refuse_connect.so"
    source.write_text(_SHIM)
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", str(library), str(source), "-ldl"], check=True)
    return library
