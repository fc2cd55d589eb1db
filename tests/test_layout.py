"""The package's import direction (docs/api.md, "Layout"), read from the source with ``ast``:

    feature packages -> facade -> _driver / _telemetry -> _engine -> _kafka

- ``_engine/`` (the pure state machine) and ``_kafka/`` (Kafka's own rules) import nothing above them: no
  driver, telemetry, facade or feature package;
- ``_kafka/`` imports nothing of the project at all;
- ``_engine/`` and ``_kafka/`` read no clock and start no thread: no threading, time, socket (and no other I/O
  module), and of confluent-kafka only the ``KafkaError``/``KafkaException`` values;
- ``_driver/`` and ``_telemetry/`` do not import the facade;
- no core module (everything outside the feature packages) imports a feature package;
- no function of ``_engine/`` or ``_driver/`` is above cyclomatic complexity ``MAX_COMPLEXITY`` (radon's count).

Every import counts, also those inside functions and under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from radon.complexity import cc_visit

import throttled_admin

PACKAGE = Path(throttled_admin.__file__).resolve().parent
ROOT = "throttled_admin"

# Above the core: nothing in the core may import these. ``__main__`` is ``python -m throttled_admin``, the CLI's.
FEATURES = ("cli", "provisioning", "spark", "testing", "demo", "aio", "pytest_plugin", "__main__")
# The facade: the package itself, the client and the drop-in module.
FACADE = ("_client", "admin")
# What the pure core (_engine, _kafka) must not import.
ABOVE_THE_ENGINE = ("_driver", "_telemetry", *FACADE, *FEATURES)
# Clocks, threads and I/O: none of them in the pure core.
IMPURE = ("threading", "time", "socket", "selectors", "asyncio", "concurrent", "multiprocessing", "subprocess")
# The only confluent-kafka names the engine needs: the error values its results carry.
KAFKA_VALUES = {"KafkaError", "KafkaException"}


def module_name(path: Path) -> str:
    parts = [ROOT, *path.relative_to(PACKAGE).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(under: str = "") -> dict[str, Path]:
    """Every module of the package (or of one subpackage), by dotted name."""
    base = PACKAGE / under if under else PACKAGE
    return {module_name(path): path for path in sorted(base.rglob("*.py"))}


def imports(name: str, path: Path) -> Iterator[tuple[int, str, tuple[str, ...]]]:
    """(line, imported module, names taken from it) for every import statement of a module."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, ()
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:  # relative: resolved against the importing module's package
                package = name.split(".") if is_package else name.split(".")[:-1]
                base = package[: len(package) - (node.level - 1)]
                target = ".".join([*base, target] if target else base)
            yield node.lineno, target, tuple(alias.name for alias in node.names)


def imported(name: str, path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) for every module an import may bring in: ``from throttled_admin import _driver`` imports
    ``throttled_admin._driver`` as well as ``throttled_admin``."""
    for line, target, taken in imports(name, path):
        yield line, target
        for alias in taken:
            yield line, f"{target}.{alias}"


def within(target: str, part: str) -> bool:
    """Whether an imported module is ``throttled_admin.<part>`` or inside it."""
    prefix = f"{ROOT}.{part}"
    return target == prefix or target.startswith(prefix + ".")


def is_facade(target: str) -> bool:
    return target == ROOT or any(within(target, part) for part in FACADE)


def top(target: str) -> str:
    return target.split(".")[0]


def location(path: Path, line: int) -> str:
    return f"{path.relative_to(PACKAGE.parent)}:{line}"


ALL = modules()
ENGINE = modules("_engine")
KAFKA = modules("_kafka")
PURE = {**ENGINE, **KAFKA}
CORE = {name: path for name, path in ALL.items() if not any(within(name, part) for part in FEATURES)}


def test_the_layers_are_where_the_layout_says() -> None:
    for package in ("_engine", "_kafka", "_driver", "_telemetry", "demo"):
        assert (PACKAGE / package / "__init__.py").is_file(), package
    assert f"{ROOT}._engine.machine" in ENGINE
    assert f"{ROOT}._kafka.token_bucket" in KAFKA
    assert f"{ROOT}._client" in CORE
    assert f"{ROOT}.provisioning" not in CORE
    assert f"{ROOT}.__main__" not in CORE


def check(name: str, forbidden: Callable[[str], bool], why: str) -> None:
    """Fail, naming each line, if the module imports a module ``forbidden`` refuses."""
    path = ALL[name]
    wrong = [f"{location(path, line)} imports {target}" for line, target in imported(name, path) if forbidden(target)]
    assert not wrong, why + ":\n" + "\n".join(wrong)


@pytest.mark.parametrize("name", sorted(PURE))
def test_engine_and_kafka_rules_import_nothing_above_them(name: str) -> None:
    check(
        name,
        lambda target: target == ROOT or any(within(target, part) for part in ABOVE_THE_ENGINE),
        "the engine and Kafka's rules sit below the driver, the facade and the features",
    )


@pytest.mark.parametrize("name", sorted(KAFKA))
def test_kafka_rules_import_nothing_of_the_project(name: str) -> None:
    check(
        name,
        lambda target: top(target) == ROOT and not within(target, "_kafka"),
        "_kafka is the bottom layer (the test broker shares it)",
    )


@pytest.mark.parametrize("name", sorted(PURE))
def test_engine_and_kafka_rules_read_no_clock_and_start_no_thread(name: str) -> None:
    path = PURE[name]
    wrong = []
    for line, target, taken in imports(name, path):
        if top(target) in IMPURE:
            wrong.append(f"{location(path, line)} imports {target}")
        elif top(target) == "confluent_kafka" and (target != "confluent_kafka" or not set(taken) <= KAFKA_VALUES):
            wrong.append(f"{location(path, line)} imports {target} {list(taken)}")
    assert not wrong, (
        "the engine is sans-I/O: the driver passes the time in and does the I/O "
        "(confluent-kafka: only KafkaError/KafkaException):\n" + "\n".join(wrong)
    )


@pytest.mark.parametrize("name", sorted({**modules("_driver"), **modules("_telemetry")}))
def test_driver_and_telemetry_do_not_import_the_facade(name: str) -> None:
    check(name, is_facade, "the facade sits above the driver and telemetry")


@pytest.mark.parametrize("name", sorted(CORE))
def test_core_imports_no_feature_package(name: str) -> None:
    check(
        name,
        lambda target: any(within(target, part) for part in FEATURES),
        "feature packages sit above the core; nothing points back up",
    )


# The most decisions a function of the engine or the driver may take (issue 30): past it, split the function
# along its cases. Rerun by hand: ``radon cc -s -n C throttled_admin/_engine throttled_admin/_driver``.
MAX_COMPLEXITY = 15


@pytest.mark.parametrize("under", ["_engine", "_driver"])
def test_no_function_of_the_engine_or_driver_is_too_complex(under: str) -> None:
    wrong = []
    for path in modules(under).values():
        for block in cc_visit(path.read_text()):  # functions and methods (and classes: no "is_method")
            if hasattr(block, "is_method") and block.complexity > MAX_COMPLEXITY:
                wrong.append(f"{location(path, block.lineno)} {block.fullname}: {block.complexity}")
    assert not wrong, f"cyclomatic complexity above {MAX_COMPLEXITY} (radon cc):\n" + "\n".join(wrong)


# The layers of the core, bottom up (issue 39): a module imports only from its own layer or those below it. The
# leaf modules (errors, options, outcome records, version) sit on Kafka's rules; the feature packages above all.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("_kafka",),
    ("_errors", "_version", "_options", "_outcomes", "_extras", "_validation"),
    ("_engine",),
    ("_telemetry",),
    ("_driver",),
    ("", *FACADE),  # "": the package itself
)


def layer_of(name: str) -> int:
    part = name.removeprefix(ROOT).removeprefix(".").split(".")[0]
    for rank, parts in enumerate(LAYERS):
        if part in parts:
            return rank
    return len(LAYERS)  # a feature package


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (every import: in functions and under ``TYPE_CHECKING`` too)."""
    return {
        name: {target for _, target in imported(name, path) if target in ALL and target != name}
        for name, path in ALL.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    work.append((step, iter(sorted(graph[step]))))
                elif step in stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycles_finds_a_loop() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle() -> None:
    loops = cycles(import_graph())
    assert not loops, "modules that import each other (directly or around a loop):\n" + "\n".join(map(str, loops))


def test_no_import_points_back_up() -> None:
    wrong = []
    for name, path in CORE.items():
        for line, target in imported(name, path):
            if target in ALL and target != ROOT and layer_of(target) > layer_of(name):
                wrong.append(f"{location(path, line)} imports {target}")
    assert not wrong, "the core's layers, bottom up: " + " < ".join(map("/".join, LAYERS)) + ":\n" + "\n".join(wrong)


@pytest.mark.parametrize("name", sorted(set(ENGINE) - {f"{ROOT}._engine", f"{ROOT}._engine.machine"}))
def test_no_engine_module_imports_the_engine(name: str) -> None:
    """The machines the engine coordinates take plain data and return decisions: none of them knows ``Engine``."""
    check(name, lambda target: target == f"{ROOT}._engine.machine", "the engine's parts do not import the engine")


# The engine's own records (issue 39): it builds them of the ids and plain values the driver hands in
# (``Engine.submit``: a call's id, its ``CallSpec``, a ``TopicSpec`` per topic) and changes them alone; above it, a
# topic is named by ``TopicRef`` and a request by its id.
ENGINE_RECORDS = {"Call", "Topic", "Request", "NameHolds"}


@pytest.mark.parametrize("name", sorted(set(ALL) - set(ENGINE)))
def test_nothing_above_the_engine_takes_its_records(name: str) -> None:
    path = ALL[name]
    wrong = [
        f"{location(path, line)} imports {sorted(set(taken) & ENGINE_RECORDS)} from {target}"
        for line, target, taken in imports(name, path)
        if within(target, "_engine") and set(taken) & ENGINE_RECORDS
    ]
    assert not wrong, "the engine's records are its own: the driver passes ids and plain values\n" + "\n".join(wrong)


# h11's ``Connection``: 22 methods, 11 attributes. The issue's count: every function in the class body (properties
# included), every ``self.x`` it assigns; no mixins, base classes or attribute bags.
MAX_ENGINE_METHODS, MAX_ENGINE_ATTRIBUTES = 30, 12


def test_the_engine_stays_small() -> None:
    tree = ast.parse((PACKAGE / "_engine" / "machine.py").read_text())
    [engine] = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Engine"]
    assert not engine.bases, "no base classes or mixins"
    methods = [node.name for node in engine.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    attributes = {
        node.attr
        for node in ast.walk(engine)
        if isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Store)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    }
    assert len(methods) <= MAX_ENGINE_METHODS, f"Engine has {len(methods)} methods: {methods}"
    assert len(attributes) <= MAX_ENGINE_ATTRIBUTES, f"Engine assigns {len(attributes)}: {sorted(attributes)}"
