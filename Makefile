# Two entry points: `make run` starts a broker, `make test` runs every test.
# Both create .venv on first use and install what they need into it.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/kgroup serve --listen 127.0.0.1:9092 --data-dir ./kgroup-data

test: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python bench/core.py

clean:
	rm -rf $(VENV) kgroup-data .pytest_cache .hypothesis
