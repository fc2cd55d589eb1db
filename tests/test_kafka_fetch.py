"""The fetch of Apache Kafka's jars (tests/real_kafka/fetch.sh, `make kafka`): what is missing is a clear error
that names what to install, never a silent skip and never a stamp that makes a broken fetch look done."""

from __future__ import annotations

import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.real_kafka.broker import KAFKA_HOME

FETCH = Path(__file__).parent / "real_kafka" / "fetch.sh"
CHECK_JARS = Path(__file__).parent / "real_kafka" / "check_jars.py"
TOOLS = ("bash", "sed", "cat", "cut", "sha256sum", "mkdir", "dirname", "pwd", "rm", "tail", "date", "ls", "wc")


def _path_with(tmp_path: Path, *extra: str) -> str:
    """A PATH holding the shell tools fetch.sh uses, plus ``extra``, and nothing else."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in (*TOOLS, *extra):
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(os.path.realpath(found))
    return str(bin_dir)


def _fetch(tmp_path: Path, path: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(FETCH), str(tmp_path / "kafka")],
        env={"PATH": path, "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("tools", "missing"),
    [((), "no 'java' on PATH"), (("java",), "no 'javac' on PATH"), (("java", "javac"), "no 'mvn' on PATH")],
)
def test_a_missing_tool_is_an_error_that_names_it(tmp_path: Path, tools: tuple[str, ...], missing: str) -> None:
    if shutil.which("java") is None or shutil.which("javac") is None:
        pytest.fail("this machine has no Java 17 JDK: the kafka tests need one")
    result = _fetch(tmp_path, _path_with(tmp_path, *tools))
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: {missing}: install "), result.stderr
    assert not (tmp_path / "kafka" / ".fetched").exists()


def _corrupt_copy(tmp_path: Path) -> Path:
    """A copy of the fetched kafka-clients jar with 4 KiB flipped inside one entry's compressed data: the zip's
    directory still opens (a byte rot, a cut-and-resumed download), but a class in it no longer loads."""
    libs = tmp_path / "libs"
    libs.mkdir()
    (jar,) = (KAFKA_HOME / "libs").glob("kafka-clients-*.jar")
    copy = libs / jar.name
    shutil.copyfile(jar, copy)
    with zipfile.ZipFile(copy) as z:
        biggest = max(z.infolist(), key=lambda info: info.compress_size)
    data = bytearray(copy.read_bytes())
    start = biggest.header_offset + 30 + len(biggest.filename) + 64  # into the entry's data, past its header
    for i in range(start, start + min(4096, biggest.compress_size - 128)):
        data[i] ^= 0xFF
    copy.write_bytes(bytes(data))
    with zipfile.ZipFile(copy) as z:
        z.namelist()  # the directory is intact: a check that only lists entries passes this jar
    return libs


@pytest.mark.kafka
def test_a_corrupt_jar_is_named_not_stamped_as_fetched(tmp_path: Path) -> None:
    libs = _corrupt_copy(tmp_path)
    result = subprocess.run(
        ["python3", str(CHECK_JARS), str(libs)], capture_output=True, text=True, check=False, timeout=120
    )
    assert result.returncode == 1
    assert "error: corrupt jar(s): kafka-clients-4.4.0.jar" in result.stderr, result.stderr
    assert "~/.m2/repository" in result.stderr


@pytest.mark.kafka
def test_the_fetched_jars_pass_the_same_check() -> None:
    result = subprocess.run(
        ["python3", str(CHECK_JARS), str(KAFKA_HOME / "libs")], capture_output=True, text=True, timeout=120
    )
    assert (result.returncode, result.stderr) == (0, "")
