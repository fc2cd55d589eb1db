"""CPU and peak resident memory of a benchmark's process tree, sampled from /proc by a process of its own, so
that the sampling is not counted in (nor competes for the GIL of) the process it measures.

    python benchmarks/_proc_sampler.py ROOT_PID

samples ROOT_PID and every process below it (but itself) every 0.2 s, having printed "ready" after the first
sample, until a line arrives on its stdin, samples once more and prints one JSON object: per kind of process
("driver", "JVM", "Python workers", "brokers"), the peak RSS (MiB, summed over the kind's processes at each
sample) and the CPU seconds used since the first sample (a process that appears later counts from zero; one that
exits counts up to its last sample). In the client's processes (the driver, the Python workers) it also sums the
CPU of their threads by kind every second: librdkafka's threads (named ``rdk:...``) apart from the rest (Python's
threads, named as their process), so that a profile of the Python code can be read against the native share. Its
own CPU is reported as "sampler".

The benchmark (``pipeline.py``) starts it with ``Sampler`` below, imported as ``_proc_sampler``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from typing import Any

__all__ = ["KINDS", "Sampler"]

KINDS = ("driver", "JVM", "Python workers", "brokers")
_INTERVAL_S = 0.2
_THREADS_EVERY = 5  # samples: thread CPU once a second (reading every thread's stat is not free)
_TICK = os.sysconf("SC_CLK_TCK")


def _read(path: str) -> str:
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return ""


def _stat_cpu(stat: str) -> float:
    """User + system CPU seconds from a /proc stat line (fields after the command name in parentheses)."""
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = _read(f"/proc/{name}/stat")
            if stat:
                tree.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(name))
    return tree


def _rss_mib(pid: int) -> float:
    for line in _read(f"/proc/{pid}/status").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class _Tree:
    def __init__(self, root: int) -> None:
        self.root = root
        self.kind: dict[int, str] = {}
        self.cpu_start: dict[int, float] = {}
        self.cpu_last: dict[int, float] = {}
        self.peak = dict.fromkeys(KINDS, 0.0)
        self.thread_start: dict[tuple[int, int], float] = {}
        self.thread_last: dict[tuple[int, int], tuple[str, float]] = {}
        self.samples = 0

    def _kind_of(self, pid: int) -> str:
        if pid == self.root:
            return "driver"
        command = _read(f"/proc/{pid}/cmdline")
        if "pyspark.daemon" in command:
            return "Python workers"
        return "brokers" if "multiprocessing" in command else "JVM"

    def sample(self, *, threads: bool = False) -> None:
        tree = _children()
        pids, todo = [self.root], [self.root]
        while todo:
            for child in tree.get(todo.pop(), []):
                if child != os.getpid():
                    pids.append(child)
                    todo.append(child)
        rss = dict.fromkeys(KINDS, 0.0)
        first = self.samples == 0
        threads = threads or self.samples % _THREADS_EVERY == 0
        for pid in pids:
            stat = _read(f"/proc/{pid}/stat")
            if not stat:
                continue
            kind = self.kind.setdefault(pid, self._kind_of(pid))
            cpu = _stat_cpu(stat)
            rss[kind] += _rss_mib(pid)
            self.cpu_start.setdefault(pid, cpu if first else 0.0)
            self.cpu_last[pid] = max(self.cpu_last.get(pid, 0.0), cpu)
            if threads and kind in ("driver", "Python workers"):
                self._sample_threads(pid, first)
        for kind, mib in rss.items():
            self.peak[kind] = max(self.peak[kind], mib)
        self.samples += 1

    def _sample_threads(self, pid: int, first: bool) -> None:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return
        for tid in tids:
            stat = _read(f"/proc/{pid}/task/{tid}/stat")
            if not stat:
                continue
            name = stat[stat.index("(") + 1 : stat.rindex(")")]
            key = (pid, int(tid))
            self.thread_start.setdefault(key, _stat_cpu(stat) if first else 0.0)
            self.thread_last[key] = (name, _stat_cpu(stat))

    def report(self) -> dict[str, Any]:
        cpu = dict.fromkeys(KINDS, 0.0)
        for pid, last in self.cpu_last.items():
            cpu[self.kind[pid]] += last - self.cpu_start[pid]
        threads: dict[str, dict[str, float]] = {}
        for (pid, tid), (name, last) in self.thread_last.items():
            group = "librdkafka" if name.startswith("rdk:") else "other"
            per_kind = threads.setdefault(self.kind[pid], {"librdkafka": 0.0, "other": 0.0})
            per_kind[group] += last - self.thread_start[(pid, tid)]
        own = os.times()
        return {
            "peak_mib": self.peak,
            "cpu_s": cpu,
            "thread_cpu_s": threads,
            "sampler_cpu_s": own.user + own.system,
        }


def main() -> None:
    tree = _Tree(int(sys.argv[1]))
    stop = threading.Event()

    def stop_at_a_line() -> None:
        sys.stdin.readline()
        stop.set()

    threading.Thread(target=stop_at_a_line, daemon=True).start()
    tree.sample()
    print("ready", flush=True)
    while not stop.wait(_INTERVAL_S):
        tree.sample()
    tree.sample(threads=True)
    print(json.dumps(tree.report()), flush=True)


class Sampler:
    """The sampler process for a ``with`` block, measuring this process's tree; ``report`` after the block."""

    def __init__(self) -> None:
        self.report: dict[str, Any] = {}
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> Sampler:
        here = os.path.abspath(__file__)
        self._process = subprocess.Popen(
            [sys.executable, here, str(os.getpid())], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self._process.stdout is not None
        self._process.stdout.readline()  # "ready": the first sample is taken, the block's CPU counts from it
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._process is not None
        out, _ = self._process.communicate("stop\n", timeout=60)
        self.report = json.loads(out)


if __name__ == "__main__":
    main()
