# Two entry points: `make run` starts a broker, `make test` runs every test.
# Both create .venv on first use and install what they need into it: `run` only what serving
# needs (kgroup and its few dependencies), `test` everything (Spark, the real Kafka clients,
# and the Node clients where Node is installed).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run
SPARK_STAMP := $(VENV)/.installed-spark
NODE := $(shell command -v node 2>/dev/null)
NODE_STAMP := node_modules/.installed

.PHONY: run test bench bench-java bench-kafka clean chromium tmux kcat spark reference schema stress stress-named stress-ng explore java-clients go-clients clients-doc

# Headless Chromium: a test opens the rebalance lab's HTML report in it. Debian's package,
# installed once (as root, or through sudo).
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip

# `make run`: kgroup alone, with pip's progress shown (no -q).
$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -e .
	touch $(RUN_STAMP)

# `make spark`: add Spark (the lab's sweep, the PySpark source and sink), and Spark's own
# Kafka connector (spark-sql-kafka-0-10, Maven Central through spark/pom.xml, into spark/lib,
# git-ignored) that the tests and bench/spark_io.py compare format("kgroup") with.
$(SPARK_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -e '.[spark]'
	touch $(SPARK_STAMP) $(RUN_STAMP)

SPARK_KAFKA_STAMP := spark/lib/.installed
$(SPARK_KAFKA_STAMP): spark/pom.xml
	mvn -q -B -f spark/pom.xml dependency:copy-dependencies -DoutputDirectory=lib
	touch $(SPARK_KAFKA_STAMP)

# `make test`: everything.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP) $(SPARK_STAMP) $(RUN_STAMP)

# `make run HOST=0.0.0.0 PORT=9093 DATA=/var/lib/kgroup`: where `make run` listens and keeps
# its data. Set on the command line only (`=`, not `?=`): a PORT or HOST in the environment,
# as some shells and platforms export, never moves the broker.
HOST = 127.0.0.1
PORT = 9092
DATA = ./kgroup-data

run: $(RUN_STAMP)
	$(BIN)/kgroup serve --listen $(HOST):$(PORT) --data-dir $(DATA)

spark: $(SPARK_STAMP) $(SPARK_KAFKA_STAMP)

chromium:
	@command -v chromium >/dev/null 2>&1 || { $(SUDO) apt-get update -q && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; }

# tmux: a test drives `kgroup groups watch` in a real terminal (send-keys, capture-pane).
tmux:
	@command -v tmux >/dev/null 2>&1 || { $(SUDO) apt-get update -q && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q tmux; }

# kcat: Debian's kcat 1.7.1 is built on librdkafka 2.0.2, which needs SaslHandshake v0 in the
# broker's range (tests/integration/test_sasl_handshake_v0.py drives it over SASL).
kcat:
	@command -v kcat >/dev/null 2>&1 || { $(SUDO) apt-get update -q && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q kcat; }

# stress-ng: the load beside `make stress` (Debian's package), installed once like tmux.
stress-ng:
	@command -v stress-ng >/dev/null 2>&1 || { $(SUDO) apt-get update -q && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q stress-ng; }

# The Node clients (kafkajs, @platformatic/kafka) the Node tests drive, pinned in
# package-lock.json; only where Node is installed.
$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $(NODE_STAMP)

# `make reference`: Apache Kafka 4.4.0 (broker, CLI tools, Java clients, Kafka Streams) from
# Maven Central through reference/pom.xml, into reference/lib (git-ignored), once. The
# differential tests run every scenario on it and on kgroup; `make run` never needs it.
REF_STAMP := reference/lib/.installed
$(REF_STAMP): reference/pom.xml
	mvn -q -B -f reference/pom.xml dependency:copy-dependencies -DoutputDirectory=lib
	touch $(REF_STAMP)

reference: $(REF_STAMP)

# `make schema`: Kafka 4.4's JSON message specs for the versions kio lacks or has differently,
# copied from the clients jar into src/kgroup/wire/specs (committed package data: `make run`
# needs neither Java nor the jar; kgroup builds the classes from them on first use), with
# their index. tools/kiogen.py --report lists them; --check compares.
schema: $(REF_STAMP) $(RUN_STAMP)
	$(BIN)/python tools/kiogen.py

# The programs the tests drive: tests/java (the interop tests' Java worker, the Kafka Streams
# apps of tests/streams, Kafka's own streams task assignor as an oracle), compiled with
# javac against the reference's Kafka 4.4 jars, and the Go programs of tests/go (franz-go,
# sarama), built with the machine's Go from the modules go.mod/go.sum pin. Each is built once
# (a stamp) and again only when a source changes; the tests call these targets themselves too.
JAVA_SRC := $(wildcard tests/java/*.java)
JAVA_STAMP := build/java/.compiled
$(JAVA_STAMP): $(JAVA_SRC) $(REF_STAMP)
	rm -rf build/java && mkdir -p build/java
	javac -nowarn -encoding UTF-8 -d build/java -cp 'reference/lib/*' $(JAVA_SRC)
	touch $(JAVA_STAMP)

java-clients: $(JAVA_STAMP)

# The benchmarks' Java clients (bench/java: Kafka 4.4's producer and consumer for
# bench/broker_throughput.py --java-producers / --java-consumers), built the same way.
BENCH_JAVA_SRC := $(wildcard bench/java/*.java)
BENCH_JAVA_STAMP := build/bench-java/.compiled
$(BENCH_JAVA_STAMP): $(BENCH_JAVA_SRC) $(REF_STAMP)
	rm -rf build/bench-java && mkdir -p build/bench-java
	javac -nowarn -encoding UTF-8 -d build/bench-java -cp 'reference/lib/*' $(BENCH_JAVA_SRC)
	touch $(BENCH_JAVA_STAMP)

bench-java: $(BENCH_JAVA_STAMP)

GO_SRC := $(wildcard tests/go/*.go) tests/go/go.mod tests/go/go.sum
GO_STAMP := build/go/.built
$(GO_STAMP): $(GO_SRC)
	mkdir -p build/go
	cd tests/go && go build -trimpath -o ../../build/go/interop .
	touch $(GO_STAMP)

go-clients: $(GO_STAMP)

# docs/clients.md from the results of the tests the client matrix names (tests/interop/matrix.py);
# docs/tools.md from tests/interop/tool_table.py.
clients-doc: $(STAMP) reference java-clients go-clients $(if $(NODE),$(NODE_STAMP))
	$(BIN)/python -m tests.interop.docs --run

# KGROUP_REQUIRE_REFERENCE=1: a reference test fails rather than skips if Kafka cannot run.
# --hypothesis-profile=ci: the properties run derandomized (tests/plugins/hypothesis_profiles.py).
# -n 3 --dist loadfile: three pytest-xdist workers, each module whole on one of them (its
# module-scoped brokers with it; each worker has its own session brokers and reference
# Kafka). Most integration time is waiting on brokers and clients: two workers on two
# cores took the suite from ~45 to ~32 minutes, and with two the cores still sat 60-80%
# idle through much of the integration tests, so a third took a fresh clone's run from
# 33.3 to 29.3 minutes (2026-12-01, same machine, an hour apart). CI once took 43.5
# minutes with two. TEST_WORKERS=2 for the old split.
TEST_WORKERS ?= 3
test: $(STAMP) reference spark java-clients go-clients chromium tmux kcat $(if $(NODE),$(NODE_STAMP))
	KGROUP_REQUIRE_REFERENCE=1 $(BIN)/python -m pytest -q --hypothesis-profile=ci -n $(TEST_WORKERS) --dist loadfile

# `make stress`: the flake hunt (tests/stress.py). PASSES runs of STRESS_TESTS in random
# order with stress-ng keeping STRESS_LOAD cores busy; lists each test that failed at least
# once. E.g. `make stress PASSES=5 STRESS_TESTS="tests/integration/test_membership.py -k static"`.
PASSES ?= 3
STRESS_TESTS ?= tests/integration
STRESS_LOAD ?= 2
stress: $(STAMP) reference spark java-clients go-clients chromium tmux kcat stress-ng $(if $(NODE),$(NODE_STAMP))
	KGROUP_REQUIRE_REFERENCE=1 $(BIN)/python -m tests.stress --passes $(PASSES) --load $(STRESS_LOAD) $(STRESS_TESTS)

# `make stress-named`: the tests issue 28 named as flaky (tests/stress_named.txt), NAMED_PASSES
# (20) passes in a row under stress-ng, then the examples/testing coordinator scenario (a
# project of its own: its own pytest.ini) as many times; each run ends 0 only if no pass failed.
NAMED_PASSES ?= 20
stress-named: $(STAMP) reference stress-ng
	KGROUP_REQUIRE_REFERENCE=1 $(BIN)/python -m tests.stress --passes $(NAMED_PASSES) --load $(STRESS_LOAD) \
		--out .stress/named $$(grep -v '^#' tests/stress_named.txt)
	$(BIN)/python -m tests.stress --passes $(NAMED_PASSES) --load $(STRESS_LOAD) --out .stress/example \
		--config-file=examples/testing/pytest.ini examples/testing -kcoordinator_that_goes_away

# `make explore`: every hypothesis property with fresh randomness and ten times the examples
# (the `explore` profile), for whoever changes the core. EXPLORE_TESTS narrows it.
EXPLORE_TESTS ?= tests/unit tests/lab
explore: $(STAMP)
	$(BIN)/python -m pytest -q -m hypothesis --hypothesis-profile=explore --timeout=3600 $(EXPLORE_TESTS)

bench: $(STAMP)
	$(BIN)/python bench/core.py

# kgroup beside Apache Kafka 4.4 on this machine (issue 35): every figure, --runs 3, as
# markdown tables for bench/README.md. ARGS=--quick runs everything tiny.
bench-kafka: $(STAMP) reference bench-java
	$(BIN)/python bench/kafka_side_by_side.py $(ARGS)

clean:
	rm -rf $(VENV) kgroup-data .pytest_cache .hypothesis .stress node_modules reference/lib build/java build/bench-java build/go spark/lib
