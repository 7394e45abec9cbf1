# One command per gate. `make test` sets everything up on a fresh machine (venv, dependencies,
# the official schema from npm, third-party agents for interop) and runs lint, types and tests.
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin

.PHONY: setup schema interop-deps lint typecheck test bench demo clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e . --group dev
	touch $@

schema:
	bash scripts/fetch_schema.sh

interop-deps:
	bash scripts/fetch_interop_agents.sh

lint: setup
	$(BIN)/ruff check src tests scripts benchmarks examples
	$(BIN)/ruff format --check src tests scripts benchmarks examples

typecheck: setup
	$(BIN)/pyright --pythonpath $(PY)

# The PostgreSQL tests run on a throwaway server (scripts/with_postgres.sh); without
# PostgreSQL's binaries they skip, saying why (in CI they must run).
test: setup schema interop-deps lint typecheck
	bash scripts/with_postgres.sh $(BIN)/pytest -q

bench: setup
	$(PY) benchmarks/bench_protocol.py

# The demo needs accord and its coding agent only, not the dev tools; pip shows its progress.
demo: $(VENV)/.demo-installed
	$(PY) scripts/demo.py

$(VENV)/.demo-installed: pyproject.toml
	@echo "==> creating $(VENV) (a Python virtual environment)"
	@test -x $(PY) || python3 -m venv $(VENV)
	@echo "==> installing accord with its coding agent: pip install -e '.[coder]'"
	$(PY) -m pip install --progress-bar on -e ".[coder]"
	@touch $@

clean:
	rm -rf $(VENV) .schema-cache .interop .pytest_cache .ruff_cache
