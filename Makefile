# The two commands of the README. Both create .venv on first use and install from this project's own files.
PYTHON ?= python3
# Three workers on two cores, a test file each at a time: the suite mostly waits on sockets and deadlines, not
# on the CPU (docs/reliability.md has the runs).
PYTEST_ARGS ?= -n 3 --dist loadfile
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint typecheck clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed-demo: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[demo]'
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed-demo

demo: $(VENV)/.installed-demo
	$(BIN)/python -m throttled_admin.demo $(ARGS)

lint: $(VENV)/.installed-test
	$(BIN)/ruff check throttled_admin tests examples benchmarks
	$(BIN)/ruff format --check throttled_admin tests examples benchmarks
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache demo-admitted-mutations.png
