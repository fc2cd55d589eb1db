"""The install hints (``throttled_admin._extras``) against pyproject.toml's extras, the ``demo`` extra (what
``make demo`` installs) against what the examples import, and the license."""

from __future__ import annotations

import ast
import re
import sys
from importlib.metadata import PackageNotFoundError, packages_distributions, requires

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support import REPO
from throttled_admin._extras import REQUIREMENTS, install_hint

tomllib = pytest.importorskip("tomllib")  # Python 3.11+
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
SELF = canonicalize_name(PROJECT["name"])


def _extra(name: str) -> list[str]:
    """An extra's requirements, with its references to other extras of the project resolved."""
    found: list[str] = []
    for text in PROJECT["optional-dependencies"][name]:
        requirement = Requirement(text)
        if canonicalize_name(requirement.name) == SELF:
            for extra in sorted(requirement.extras):
                found += _extra(extra)
        else:
            found.append(text)
    return found


def test_the_hints_name_what_pyproject_declares() -> None:
    for extra, requirements in REQUIREMENTS.items():
        assert {str(Requirement(r)) for r in requirements} == {str(Requirement(r)) for r in _extra(extra)}, extra


def test_a_hint_is_true_outside_a_checkout_and_inside_one() -> None:
    assert install_hint("testing") == (
        "pip install 'kafka-python>=3.0.12,<4' (throttled_admin's 'testing' extra; in a checkout: "
        "pip install -e '.[testing]')"
    )
    assert not re.search(r"pip install -e .* from a checkout of", install_hint("cli"))


def _installed_closure(requirements: list[str]) -> set[str]:
    """The distributions these requirements install, and theirs, as installed here."""
    seen: set[str] = set()
    todo = [Requirement(r) for r in requirements]
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            children = requires(requirement.name) or []
        except PackageNotFoundError:
            continue
        for text in children:
            child = Requirement(text)
            extras = requirement.extras or {""}
            if child.marker is None or any(child.marker.evaluate({"extra": extra}) for extra in extras):
                todo.append(child)
    return seen


def test_make_demo_installs_what_every_example_imports() -> None:
    """Found by a new user: examples/metrics_*.py failed with ModuleNotFoundError right after `make demo`."""
    provided = _installed_closure([*PROJECT["dependencies"], *REQUIREMENTS["demo"]])
    owners = packages_distributions()
    missing = {}
    for example in sorted((REPO / "examples").glob("*.py")):
        for node in ast.walk(ast.parse(example.read_text())):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            for module in modules:
                top = module.split(".")[0]
                if top in sys.stdlib_module_names or top in ("__future__", "throttled_admin"):
                    continue
                dists = {canonicalize_name(d) for d in owners.get(top, [top])}
                if not dists & provided:
                    missing[f"{example.name}: {module}"] = sorted(dists)
    assert missing == {}


def test_the_license_is_apache_2_and_ships_in_the_wheel() -> None:
    """pyproject.toml declares Apache-2.0; setuptools puts license-files in the wheel's .dist-info/licenses/."""
    text = (REPO / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License\n                           Version 2.0, January 2004")
    assert "END OF TERMS AND CONDITIONS" in text
    assert (PROJECT["license"], PROJECT["license-files"]) == ("Apache-2.0", ["LICENSE"])
