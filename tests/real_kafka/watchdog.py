"""Stops one Kafka JVM when the process that owns it dies without stopping it.

A JVM runs in a session of its own (the terminal's Ctrl-C reaches pytest, which stops it in order), so nothing
else ends it when its owner is killed: SIGTERM from a CI timeout, SIGKILL, the OOM killer. ``broker._launch``
starts one watchdog per JVM (``python -m tests.real_kafka.watchdog OWNER_PID JVM_PID JVM_START_TIME NODE_DIR``).
It waits on both processes' pidfds (no polling): when the JVM ends first it exits; when the owner ends first it
stops the JVM (SIGTERM, then SIGKILL after 10 s) and removes the node's directory.
"""

from __future__ import annotations

import os
import select
import shutil
import sys

from tests.real_kafka.broker import stop_pids


def main(owner: int, jvm: int, started: int, directory: str) -> None:
    try:
        jvm_fd = os.pidfd_open(jvm)
    except ProcessLookupError:
        return
    try:
        owner_fd = os.pidfd_open(owner)
    except ProcessLookupError:
        owner_fd = None  # already gone
    if owner_fd is not None:
        readable, _, _ = select.select([owner_fd, jvm_fd], [], [])
        if jvm_fd in readable:
            return
    stop_pids([(jvm, started)])
    shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
