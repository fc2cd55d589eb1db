# The commands of the README. They create their venvs on first use and install from this project's own files.
PYTHON ?= python3
# Four workers on two cores, a test file each at a time: the suite mostly waits on sockets and deadlines, not
# on the CPU (the soak runs: git log -p docs/reliability.md; `make test` used about half of two cores' time with three
# workers). loadfile: a file's module-scoped Spark session or Spark Connect server starts once
# (tests/test_suite_groups.py); the files that start Spark run in two groups, a worker each (tests/conftest.py). The
# tests on the three-node quorum run in test-cluster, without workers. (loadgroup groups nothing under pytest 9.2:
# pytest-xdist issue 1386.)
PYTEST_ARGS ?= -n 4 --dist loadfile
VENV := .venv
BIN := $(VENV)/bin

# Apache Kafka's own jars (broker, kafka-topics.sh, the Java AdminClient), pinned in tests/real_kafka/pom.xml and
# fetched by Maven into an ignored cache; the tests marked `kafka` run against them. A second fetch costs nothing.
KAFKA_HOME := .kafka/4.4.0

# The unit, engine and model tests: no broker, no JVM, no Spark (a few start a subprocess or one QuotaBroker).
# `make test` measures the package's coverage on these; `make test-pythons` runs them on the other Pythons.
UNIT_TESTS := \
	tests/test_engine_first_contact.py tests/test_engine_incarnations.py tests/test_engine_model.py \
	tests/test_engine_rules.py tests/test_engine_verdicts.py tests/test_turns.py tests/test_topic_futures.py \
	tests/test_quota.py tests/test_token_bucket.py tests/test_sensor.py tests/test_round_trip.py \
	tests/test_errors.py tests/test_properties.py tests/test_input_parity_properties.py tests/test_validation.py \
	tests/test_parity_closed_client.py tests/test_metadata_wire.py tests/test_quorum_wire.py tests/test_quorum_watch.py \
	tests/test_librdkafka_log.py tests/test_public_api.py tests/test_layout.py tests/test_cli_units.py \
	tests/test_engine_outcomes.py tests/test_engine_actions.py tests/test_engine_error_reasons.py \
	tests/test_call_outcomes.py tests/test_driver_loop.py tests/test_collector.py tests/test_engine_call_parts.py \
	tests/test_callback_runner.py

# The Pythons besides .venv's (3.11, the full suite) that `requires-python` admits: each gets a venv of its own,
# .venv-3.X, from pyenv's newest 3.X.* or python3.X on PATH, with only what those tests need (the `unit` extra: about
# a tenth of .venv's 1.2 GB, which is mostly pyspark and pyarrow). On them, the unit tests above and two end-to-end
# suites over loopback: a QuotaBroker create/throttle round trip, and the asyncio client (aio.py reads
# Task.cancelling, which Python 3.10 lacks).
OTHER_PYTHONS ?= 3.10 3.12 3.13
PYENV_ROOT ?= $(HOME)/.pyenv
E2E_TESTS := tests/test_client_e2e.py::test_strict_create_retries_only_throttled_topics tests/test_aio.py
python_for = $(or $(lastword $(wildcard $(PYENV_ROOT)/versions/$(1).*/bin/python$(1))),$(shell python$(1) -c 'import sys; print(sys.executable)' 2>/dev/null))

.PHONY: demo test test-unit test-suite test-cluster test-pythons lint typecheck clean kafka broker-configs

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# pip shows the build backend's warnings even with --quiet (setuptools' boxed note on editable installs): each
# install's output goes to a log in its venv, printed only if the install fails.
$(VENV)/.installed-demo: pyproject.toml | $(BIN)/python
	@echo "installing throttled_admin[demo] into $(VENV) (pip's output: $(VENV)/pip-demo.log)"
	@$(BIN)/python -m pip install --quiet -e '.[demo]' >$(VENV)/pip-demo.log 2>&1 || { cat $(VENV)/pip-demo.log; exit 1; }
	@touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	@echo "installing throttled_admin[test] into $(VENV) (pip's output: $(VENV)/pip-test.log)"
	@$(BIN)/python -m pip install --quiet -e '.[test]' >$(VENV)/pip-test.log 2>&1 || { cat $(VENV)/pip-test.log; exit 1; }
	@touch $@ $(VENV)/.installed-demo

demo: $(VENV)/.installed-demo
	$(BIN)/python -m throttled_admin.demo $(ARGS)

lint: $(VENV)/.installed-test
	$(BIN)/ruff check throttled_admin tests examples benchmarks
	$(BIN)/ruff format --check throttled_admin tests examples benchmarks
	$(BIN)/mypy

$(KAFKA_HOME)/.fetched: tests/real_kafka/pom.xml tests/real_kafka/fetch.sh tests/real_kafka/check_jars.py $(wildcard tests/real_kafka/java/*.java)
	PYTHON=$(PYTHON) bash tests/real_kafka/fetch.sh $(KAFKA_HOME)

kafka: $(KAFKA_HOME)/.fetched

# Rewrite QuotaBroker's broker config set (throttled_admin/testing/broker_configs.json) from a real Kafka broker's
# DescribeConfigs (tests/real_kafka/broker_configs.py; ARGS=--check only compares).
broker-configs: $(VENV)/.installed-test kafka
	$(BIN)/python -m tests.real_kafka.broker_configs $(ARGS)

# The suite on 3.11 in two runs side by side (make -j2): the unit tests in one process with the package's coverage,
# and the rest on PYTEST_ARGS's workers; then the coverage report. coverage.py's tracer about doubles the CPU time
# of the code it runs, which the whole suite cannot afford within CI's 10 minutes; the unit tests are CPU-bound
# and take about a minute with it.
test: lint kafka
	$(MAKE) --no-print-directory -j2 --output-sync=target test-unit test-suite
	@echo "Coverage of throttled_admin by the unit, engine and model tests (UNIT_TESTS in the Makefile):"
	$(BIN)/python -m coverage report

# coverage run, not pytest-cov: pytest imports the package (its pytest11 plugin) before pytest-cov starts measuring,
# so every line run at import (def, class, constants) would count as missed.
test-unit: $(VENV)/.installed-test
	$(BIN)/python -m coverage run -m pytest $(UNIT_TESTS)

test-suite: $(VENV)/.installed-test kafka
	$(BIN)/python -m pytest $(PYTEST_ARGS) -m "not cluster" $(addprefix --ignore=,$(UNIT_TESTS))

# The tests marked `cluster`: on the three-node Kafka 4.4 quorum (rolling restarts, failovers, kill -9), one at a
# time on one cluster in one process, and on one-node brokers restarted, owed minutes of quota, or held by the slow
# controller (answers timed against its holds). They take minutes
# of restarts and waits, more than `make test`'s 10 minutes can hold beside the rest; .ci/run runs them after it.
test-cluster: $(VENV)/.installed-test kafka
	$(BIN)/python -m pytest -p no:xdist -m cluster tests

.venv-%/.installed-unit: pyproject.toml
	@test -n "$(call python_for,$*)" || { echo "Python $* not found: install it (pyenv install $*) or put python$* on PATH"; exit 1; }
	$(call python_for,$*) -m venv .venv-$*
	.venv-$*/bin/python -m pip install --quiet --upgrade pip
	@echo "installing throttled_admin[unit] into .venv-$* (pip's output: .venv-$*/pip-unit.log)"
	@.venv-$*/bin/python -m pip install --quiet -e '.[unit]' >.venv-$*/pip-unit.log 2>&1 || { cat .venv-$*/pip-unit.log; exit 1; }
	touch $@

.PRECIOUS: .venv-%/.installed-unit  # an intermediate of test-python-%: make would delete it

test-python-%: .venv-%/.installed-unit
	.venv-$*/bin/python -m pytest $(PYTEST_ARGS) $(UNIT_TESTS) $(E2E_TESTS)

test-pythons: $(foreach version,$(OTHER_PYTHONS),test-python-$(version))

clean:
	rm -rf $(VENV) .venv-* .coverage .kafka build *.egg-info .pytest_cache .mypy_cache .ruff_cache demo-admitted-mutations.png
