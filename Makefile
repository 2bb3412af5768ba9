# thirteen — every target installs what it needs into ./.venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
GENERATED := service/_generated/.stamp
PROTOS := $(wildcard protos/thirteen/v1/*.proto)

.PHONY: setup test lint format unit run bench clean

setup: $(STAMP) $(GENERATED)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

$(GENERATED): $(STAMP) $(PROTOS) service/protogen.py
	$(BIN)/python -m service.protogen
	touch $@

lint: setup
	cd protos && ../$(BIN)/buf lint
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy domain

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

test: lint
	$(BIN)/python -m pytest

run: setup
	@echo "thirteen serve is not built yet (see the issues); try: echo '{...}' | $(BIN)/thirteen score"

bench: setup
	$(BIN)/python -m tests.bench

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache .hypothesis
