"""What README.md, docs/ and the examples tell a user holds: the README's quick start under a tight quota, the
pipeline docs' way to quiet librdkafka's log, one wording of the retry hint everywhere, links that lead somewhere,
and the rules lettered alike in docs/semantics.md, the engine and its model, each with tests that exist."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import throttled_admin
from tests.cli_helpers import cli_env
from throttled_admin import NewTopic, ThrottledAdminClient
from throttled_admin.testing import QuotaBroker


def test_one_wording_for_the_retry_hint() -> None:
    """The retry hint read ``(retry in 999 ms)`` in the example and ``Retry after N ms.`` in the CLI: the
    example now prints the CLI's (tests/test_examples_and_demo.py runs it), and no other wording is left."""
    from tests.support import REPO

    other = re.compile(r"retry in \{|\(retry in |retry in \d+ ?ms", re.IGNORECASE)
    for folder in ("throttled_admin", "examples", "docs"):
        for path in (REPO / folder).rglob("*"):
            if path.suffix in (".py", ".md") and other.search(path.read_text(encoding="utf-8")):
                pytest.fail(f"{path.relative_to(REPO)} words the retry hint otherwise")
    assert "Retry after" in (REPO / "examples" / "script_retry_off.py").read_text()


def _readme_tight_quota() -> tuple[str, str]:
    """README's quick-start paragraph on a tight quota, and its code."""
    from tests.support import REPO

    readme = (REPO / "README.md").read_text()
    start = readme.find("**Under a tight quota.**")
    assert start >= 0, "README's quick start does not say what happens under a tight quota"
    section = readme[start : readme.index("The same with asyncio", start)]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert code is not None
    return section, code.group(1)


def test_the_readme_quick_start_says_what_a_tight_quota_does_and_how_to_give_a_job_time() -> None:
    """README's quick start (500 x 6 partitions, 60 s deadline) failed against a 5/s strict quota with no hint."""
    section, code = _readme_tight_quota()
    for words in ("ThrottlingQuotaExceededException", "timeout_ms=", "MutationQuota(rate=", "(3000 - 55) / 5"):
        assert words in section, words
    # What it says happens, scaled down: 20 x 6 partitions against a strict 5/s quota (burst 55) with a 3 s deadline
    # create what the quota admits; every other topic fails with ThrottlingQuotaExceededException.
    with QuotaBroker(controller_mutation_rate=5, enforcement="strict") as broker:
        with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
            futures = admin.create_topics([NewTopic(f"orders.{i}", 6, 1) for i in range(20)], timeout_ms=3000)
            outcomes = [future.exception(30) for future in futures.values()]
        created = [exc for exc in outcomes if exc is None]
        assert 0 < len(created) < 20
        assert all(isinstance(exc, throttled_admin.ThrottlingQuotaExceededException) for exc in outcomes if exc)
    # Its code, scaled down (12 topics, replication factor 1), runs paced: every topic created, never refused.
    scaled = code.replace("range(500)", "range(12)").replace("6, 3)", "6, 1)")
    with QuotaBroker(controller_mutation_rate=5, enforcement="strict") as broker:
        exec(scaled.replace("broker:9092", broker.bootstrap_servers), {})  # the README's own code
        assert len(broker.topics()) == 12
        assert not any(89 in r.errors.values() for r in broker.request_log())


_APPLY_UNREACHABLE = """
import sys
from throttled_admin.provisioning import PlanRow, apply_plan
conf = {"bootstrap.servers": "127.0.0.1:%d", **dict(a.split("=", 1) for a in sys.argv[1:])}
[result] = apply_plan([PlanRow("east", "ensure", "orders", 1)], {"east": conf})
print(result.status, result.error_message)
"""


def test_the_pipeline_docs_say_how_to_quiet_librdkafkas_log(tmp_path: Path, refused_address: str) -> None:
    """The pipeline docs never said how to quiet librdkafka's log in executor logs; what they say works."""
    from tests.support import REPO

    docs = (REPO / "docs" / "pipeline.md").read_text()
    section = docs[docs.index("### Quieting librdkafka's log") :]
    assert "log_level: 0" in section[: section.index("## What each action does")]
    script = _APPLY_UNREACHABLE % int(refused_address.rsplit(":", 1)[1])  # nothing listens there

    def run(*settings: str) -> subprocess.CompletedProcess[str]:
        args = [sys.executable, "-c", script, *settings]
        return subprocess.run(args, capture_output=True, text=True, timeout=120, env=cli_env(), check=False)

    loud, quiet = run(), run("log_level=0")
    assert "|FAIL|" in loud.stderr  # librdkafka's connection failures, as an executor's log shows them
    assert quiet.stderr == "", quiet.stderr
    for done in (loud, quiet):
        assert done.stdout.startswith("failed not sent: cannot connect to 127.0.0.1:"), done.stdout


def _github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _prose(text: str) -> str:
    """The text outside fenced code blocks."""
    return re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)


def test_every_link_of_the_readme_and_the_docs_leads_to_a_file_and_heading_that_exist() -> None:
    """The docs were cut to half their size (issue 39): a link into a section that was cut or renamed fails here."""
    from tests.support import REPO

    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", _prose(page.read_text(encoding="utf-8"))):
            if re.match(r"[a-z]+:", target):
                continue  # http(s), mailto: not ours to check
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{page.relative_to(REPO)}: {target}: no such file")
            elif anchor and linked.suffix == ".md":
                headings = re.findall(r"^#+ (.+)$", _prose(linked.read_text(encoding="utf-8")), re.MULTILINE)
                if anchor not in {_github_anchor(h) for h in headings}:
                    broken.append(f"{page.relative_to(REPO)}: {target}: no such heading")
    assert not broken, "\n".join(broken)


def _rules_docstring() -> str:
    """The engine module's docstring that states the rules (wherever the engine keeps it)."""
    from tests.support import REPO

    for path in sorted((REPO / "throttled_admin" / "_engine").glob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        if "The rules (docs/semantics.md)" in doc:
            return doc
    raise AssertionError("no module of throttled_admin/_engine states the rules (docs/semantics.md)")


def test_the_rules_are_lettered_alike_in_the_docs_the_engine_and_the_model_and_each_names_tests_that_exist() -> None:
    """docs/semantics.md stated rules a-k while the engine's docstring and the model lettered them a-j (its broker
    defaults checked as "rule g"), and the map from rules to tests was a paragraph: now one table, one letter each,
    the same in the three, and every test the table names is defined in tests/."""
    from tests.support import REPO

    docs = (REPO / "docs" / "semantics.md").read_text(encoding="utf-8")
    assert "\n## The rules\n" in docs, "docs/semantics.md has no table of the rules (## The rules)"
    start = docs.index("\n## The rules\n")
    table = docs[start : docs.index("\n## ", start + 1)]
    rows = re.findall(r"^\| \*\*([a-z])\*\* \| .+ \| (.+) \|$", table, re.MULTILINE)
    letters = [letter for letter, _ in rows]
    assert letters == [chr(ord("a") + i) for i in range(len(letters))], letters
    engine = re.findall(r"^([a-z])\. ", _rules_docstring(), re.MULTILINE)
    assert engine == letters, f"the engine states rules {engine}, docs/semantics.md {letters}"
    model = (REPO / "tests" / "test_engine_model.py").read_text(encoding="utf-8")
    checked = sorted(set(re.findall(r"\brule ([a-z])\b", model, re.IGNORECASE)))
    assert checked == letters, f"the model checks rules {checked}, docs/semantics.md states {letters}"
    defined: set[str] = set()
    for path in (REPO / "tests").rglob("test_*.py"):
        for match in re.finditer(
            r"^\s*(?:async def|def) (test_\w+)|^(test_\w+) =", path.read_text(encoding="utf-8"), re.MULTILINE
        ):
            defined.add(match.group(1) or match.group(2))
    for letter, tests in rows:
        named = re.findall(r"`(test_\w+)`", tests)
        assert named, f"rule {letter} names no test"
        missing = [name for name in named if name not in defined]
        assert not missing, f"rule {letter} names tests that do not exist: {missing}"
