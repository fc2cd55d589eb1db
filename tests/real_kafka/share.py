"""One Kafka JVM per set-up, shared by every pytest worker of a run.

pytest's main process (the xdist controller, or the only process without xdist) makes a folder and names it in
:data:`SHARE_ENV` before the workers start, so they inherit it. The first worker that needs a set-up starts it
under a file lock and writes its addresses there; the others attach to it. The main process stops every JVM
named there when the run ends (:func:`stop_all`), so a broker outlives the worker that started it but not the
run. Tests share a broker by keeping apart: their own topic prefix and their own client-id quota entity.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.real_kafka.broker import OWNER_ENV, BrokerSpec, KafkaCluster, scratch_root, stop_pids

SHARE_ENV = "THROTTLED_ADMIN_KAFKA_SHARE"


def make_share_dir() -> Path:
    """Called by the main process: the folder the workers' clusters are recorded in."""
    path = Path(tempfile.mkdtemp(prefix="throttled-admin-kafka-", dir=scratch_root()))
    os.environ[SHARE_ENV] = str(path)
    os.environ[OWNER_ENV] = str(os.getpid())  # the JVMs the workers start end with this process at the latest
    return path


def share_dir() -> Path:
    value = os.environ.get(SHARE_ENV)
    return Path(value) if value else make_share_dir()


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def shared_cluster(spec: BrokerSpec) -> KafkaCluster:
    """The run's cluster for ``spec``, started by whichever worker asks first."""
    root = share_dir()
    record = root / f"{spec.key}.json"
    with _locked(root / f"{spec.key}.lock"):
        if record.exists():
            cluster = KafkaCluster.from_json(record.read_text())
            if cluster.alive():
                return cluster
            cluster.stop()  # a JVM of this set-up died: start it afresh rather than fail every later test
        cluster = KafkaCluster.start(spec, root / spec.key)
        record.write_text(cluster.to_json())
        return cluster


def stop_all(root: Path) -> None:
    """Called by the main process at the end of the run: stop every recorded JVM and remove the folder."""
    processes = []
    for record in root.glob("*.json"):
        processes += [n.process for n in KafkaCluster.from_json(record.read_text()).nodes if n.pid]
    stop_pids(processes)
    shutil.rmtree(root, ignore_errors=True)
