"""Kafka's own command line tools, as kafka-topics.sh and kafka-configs.sh run them, in one long-lived JVM.

``ToolServer`` (tests/real_kafka/java/ToolServer.java) runs a tool's ``main`` once per request and answers with
what it printed and the code the shell script would exit with, so a test pays the JVM's start once per worker
instead of once per command. Logging is configured as kafka-*.sh's ``config/tools-log4j2.yaml`` does it (WARN
and above to stderr, ``[%d] %p %m (%c)%n``).
"""

from __future__ import annotations

import base64
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from tests.real_kafka.broker import classpath

TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"
CONFIG_COMMAND = "org.apache.kafka.tools.ConfigCommand"

_LOG4J2 = """status = error
appender.stderr.type = Console
appender.stderr.name = STDERR
appender.stderr.target = SYSTEM_ERR
appender.stderr.follow = true
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stderr.ref = STDERR
"""


@dataclass(frozen=True)
class ToolResult:
    exit_code: int
    stdout: str
    stderr: str


class ToolServer:
    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="kafka-tools-")
        config = Path(self._dir.name) / "tools-log4j2.properties"
        config.write_text(_LOG4J2)
        self._lock = threading.Lock()
        self._proc = subprocess.Popen(
            [
                "java",
                "-Xmx256m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                f"-Dlog4j2.configurationFile={config}",
                "-cp",
                classpath(),
                "ToolServer",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )

    def run(self, tool: str, *args: str) -> ToolResult:
        """Run ``tool``'s main with ``args``; returns once it has finished."""
        assert self._proc.stdin is not None
        assert self._proc.stdout is not None
        line = " ".join(base64.b64encode(field.encode()).decode() for field in (tool, *args)) + "\n"
        with self._lock:
            self._proc.stdin.write(line.encode())
            self._proc.stdin.flush()
            answer = self._proc.stdout.readline().decode()
        if not answer:
            stderr = self._proc.stderr.read().decode() if self._proc.stderr else ""
            raise RuntimeError(f"ToolServer exited ({self._proc.wait()}): {stderr[-2000:]}")
        code, out, err = answer.split(" ")
        return ToolResult(int(code), base64.b64decode(out).decode(), base64.b64decode(err).decode())

    def kafka_topics(self, *args: str) -> ToolResult:
        """``kafka-topics.sh ARGS``."""
        return self.run(TOPIC_COMMAND, *args)

    def kafka_configs(self, *args: str) -> ToolResult:
        """``kafka-configs.sh ARGS``."""
        return self.run(CONFIG_COMMAND, *args)

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        for stream in (self._proc.stdout, self._proc.stderr):
            if stream is not None:
                stream.close()
        self._dir.cleanup()

    def __enter__(self) -> ToolServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
