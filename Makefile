# The two commands of the README. Both create .venv on first use and install from this project's own files.
PYTHON ?= python3
# Three workers on two cores, a test file each at a time: the suite mostly waits on sockets and deadlines, not
# on the CPU (docs/reliability.md has the runs).
PYTEST_ARGS ?= -n 3 --dist loadfile
VENV := .venv
BIN := $(VENV)/bin

# Apache Kafka's own jars (broker, kafka-topics.sh, the Java AdminClient), pinned in tests/real_kafka/pom.xml and
# fetched by Maven into an ignored cache; the tests marked `kafka` run against them. A second fetch costs nothing.
KAFKA_HOME := .kafka/4.4.0

.PHONY: demo test lint typecheck clean kafka broker-configs

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

$(KAFKA_HOME)/.fetched: tests/real_kafka/pom.xml tests/real_kafka/fetch.sh tests/real_kafka/check_jars.py $(wildcard tests/real_kafka/java/*.java)
	PYTHON=$(PYTHON) bash tests/real_kafka/fetch.sh $(KAFKA_HOME)

kafka: $(KAFKA_HOME)/.fetched

# Rewrite QuotaBroker's broker config set (throttled_admin/testing/broker_configs.json) from a real Kafka broker's
# DescribeConfigs (tests/real_kafka/broker_configs.py; ARGS=--check only compares).
broker-configs: $(VENV)/.installed-test kafka
	$(BIN)/python -m tests.real_kafka.broker_configs $(ARGS)

test: lint kafka
	$(BIN)/python -m pytest $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .kafka build *.egg-info .pytest_cache .mypy_cache .ruff_cache demo-admitted-mutations.png
