# ALTM developer entry points. `make demo` and `make test` are the README's quick start.
PY ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint kafka-start kafka-stop schemas clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[dev,e5]'
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(VENV)/bin/altm demo

test: setup
	scripts/test.sh

lint: setup
	$(VENV)/bin/ruff check altm tests benchmarks
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

kafka-start:
	scripts/kafka.sh start

kafka-stop:
	scripts/kafka.sh stop

schemas: setup
	$(VENV)/bin/altm export-schemas

clean:
	rm -rf altm-demo altm-data .pytest_cache .mypy_cache .ruff_cache
