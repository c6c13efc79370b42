# Quick start: `make demo` and `make test`. Each builds .venv from nothing on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
DEMO_STAMP := $(VENV)/.stamp-demo
TEST_STAMP := $(VENV)/.stamp-test
CHROMIUM_STAMP := $(VENV)/.stamp-chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test lint typecheck docs unit bench bench-zeus bench-dashboard clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[examples]'
	touch $@

# torch is pinned to the CPU build that lies on these machines' disk (an unpinned torch pulls
# a several-GB CUDA build); the package's own extra keeps only a lower bound.
TORCH_PIN := torch==2.13.0
TEST_EXTRAS := dev,savings,docs,postgres,server,examples,serve,llm,serving,ann,embeddings,compress,resilience,lightning,transformers,otlp,ray,ray-tune,optuna,mlflow,wandb,tensorboard,tables,notebooks,llm-clients,node,nodesim,interop,release

$(TEST_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q '$(TORCH_PIN)'
	$(BIN)/pip install -q -e '.[$(TEST_EXTRAS)]' '$(TORCH_PIN)'
	touch $@ $(DEMO_STAMP)

# Headless Chromium renders the HTML reports in tests/report (not needed by `make demo`).
# Installed with apt when missing; without apt the tests skip, or fail under CI=true.
$(CHROMIUM_STAMP): | $(BIN)/python
	@if command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then :; \
	elif command -v apt-get >/dev/null; then \
	  { $(SUDO) apt-get update -q && \
	    $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium; \
	  } || { echo "installing chromium failed" >&2; [ "$$CI" != true ]; }; \
	else echo "chromium not found and no apt-get: the HTML rendering tests will skip" >&2; fi
	@if command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then touch $@; fi

# axe-core (npm) checks the dashboard's pages for accessibility errors in tests/server; installed
# into .venv/npm from the npm registry (the pinned version), never fetched at test time.
AXE_VERSION := 4.14.1
AXE_STAMP := $(VENV)/.stamp-axe-$(AXE_VERSION)
$(AXE_STAMP): | $(BIN)/python
	@if ! command -v npm >/dev/null && command -v apt-get >/dev/null; then \
	  { $(SUDO) apt-get update -q && \
	    $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends npm; \
	  } || { echo "installing npm failed" >&2; [ "$$CI" != true ]; }; fi
	@if command -v npm >/dev/null; then \
	  mkdir -p $(VENV)/npm && npm install -q --no-save --no-audit --no-fund --prefix $(VENV)/npm \
	    'axe-core@$(AXE_VERSION)' && touch $@; \
	else echo "npm not found: the accessibility tests will skip" >&2; [ "$$CI" != true ]; fi

# promtool checks the Prometheus rules and alert tests in tests/exporter (Debian package
# prometheus); installed with apt when missing, like chromium.
PROMTOOL_STAMP := $(VENV)/.stamp-promtool
$(PROMTOOL_STAMP): | $(BIN)/python
	@if command -v promtool >/dev/null; then :; \
	elif command -v apt-get >/dev/null; then \
	  { $(SUDO) apt-get update -q && \
	    $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus; \
	  } || { echo "installing prometheus (promtool) failed" >&2; [ "$$CI" != true ]; }; \
	else echo "promtool not found and no apt-get: the rules tests will skip" >&2; fi
	@if command -v promtool >/dev/null; then touch $@; fi

# A real four-node Slurm 22.05 (slurmctld, four slurmd, slurmdbd for sacct, munge) for the
# tests in tests/slurm; installed with apt when missing, like chromium. The tests start
# their own daemons from a generated config and use the local MariaDB (127.0.0.1:3306,
# root) for a database of their own; without Slurm they skip, or fail under CI=true.
# apt-get update runs only when the package lists do not know slurm-wlm yet.
# Debian's ipmitool, the client the IPMI DCMI node-meter tests drive (tests/measure/node).
IPMITOOL_STAMP := $(VENV)/.stamp-ipmitool
$(IPMITOOL_STAMP): | $(BIN)/python
	@if command -v ipmitool >/dev/null; then :; \
	elif command -v apt-get >/dev/null; then \
	  { { apt-cache show ipmitool >/dev/null 2>&1 || $(SUDO) apt-get update -q; } && \
	    $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	      ipmitool; \
	  } || { echo "installing ipmitool failed" >&2; [ "$$CI" != true ]; }; \
	else echo "ipmitool not found and no apt-get: the IPMI node-meter tests will skip" >&2; fi
	@if command -v ipmitool >/dev/null; then touch $@; fi

SLURM_STAMP := $(VENV)/.stamp-slurm
$(SLURM_STAMP): | $(BIN)/python
	@if command -v slurmctld >/dev/null && command -v munged >/dev/null && \
	    command -v slurmdbd >/dev/null && command -v mysql >/dev/null; then :; \
	elif command -v apt-get >/dev/null; then \
	  { { apt-cache show slurm-wlm >/dev/null 2>&1 || $(SUDO) apt-get update -q; } && \
	    $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	      slurm-wlm munge slurmdbd mariadb-client; \
	  } || { echo "installing slurm-wlm, munge, slurmdbd failed" >&2; [ "$$CI" != true ]; }; \
	else echo "slurm not found and no apt-get: the real-Slurm tests will skip" >&2; fi
	@if command -v slurmctld >/dev/null && command -v slurmdbd >/dev/null; then touch $@; fi

demo: $(DEMO_STAMP)
	$(BIN)/greenml run --name demo-digits-mlp --tag example=digits --zone DE-LU --pue personal -- $(BIN)/python examples/train_digits.py
	@echo ""
	@echo "Next, try (ID: the run id printed above):"
	@echo "  $(BIN)/greenml runs list"
	@echo "  $(BIN)/greenml runs show ID"
	@echo "  $(BIN)/greenml diagnose ID"
	@echo "  $(BIN)/greenml report statement --tag example=digits --format html -o demo-report.html"
	@echo "  $(BIN)/greenml estimate --gpu H100 --count 8 --hours 100 --zone DE"

lint: $(TEST_STAMP)
	$(BIN)/ruff check src tests benchmarks examples scripts

typecheck: $(TEST_STAMP)
	$(BIN)/mypy src/greenml

# The documentation site (mkdocs.yml, docs/) into site/; any warning fails the build.
# Offline: no fonts or scripts are fetched (NO_MKDOCS_2_WARNING silences a banner), and
# the search index ships as a script (Material's offline plugin), so site/index.html
# opened from disk searches. `make docs` installs only the docs extra (and greenml's own
# dependencies, which mkdocstrings and mkdocs-click import), then checks the built search.
DOCS_STAMP := $(VENV)/.stamp-docs
$(DOCS_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[docs]'
	touch $@

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict
	$(BIN)/python scripts/check_offline_search.py site

# Flower (flwr 1.42) pins older protobuf, rich, fastapi and packaging than the other extras
# use: it gets a venv of its own, where tests/integrations/test_flower_venv.py runs its test.
FLOWER_VENV := .venv-flower
FLOWER_STAMP := $(FLOWER_VENV)/.stamp
$(FLOWER_STAMP): pyproject.toml
	$(PYTHON) -m venv $(FLOWER_VENV)
	$(FLOWER_VENV)/bin/pip install -q 'flwr==1.42.0' 'pytest>=8' -e .
	touch $@

# The fast lane: everything but the slow tests (processes, browser, cluster, fuzz; see
# tests/conftest.py), in parallel. `make test` runs the whole suite after lint, types, docs.
unit: $(TEST_STAMP)
	$(BIN)/pytest -q -m "not slow" -n auto

test: lint typecheck docs $(TEST_STAMP) $(CHROMIUM_STAMP) $(AXE_STAMP) $(PROMTOOL_STAMP) $(SLURM_STAMP) $(FLOWER_STAMP) $(IPMITOOL_STAMP)
	$(BIN)/pytest -q

BENCH_STAMP := $(VENV)/.stamp-bench

$(BENCH_STAMP): $(TEST_STAMP)
	$(BIN)/pip install -q 'codecarbon==3.3.2' 'statsmodels==0.15.0'
	touch $@

# Byte-compile first: an installed greenml has its .pyc files (pip compiles them),
# an editable checkout under PYTHONDONTWRITEBYTECODE=1 would recompile every call.
bench: $(BENCH_STAMP)
	$(BIN)/python -m compileall -q src
	$(BIN)/python benchmarks/run_targets.py

# The dashboard against MLflow's UI on the same 5,000 runs, in Chromium. MLflow's server (the
# full `mlflow` package: Flask, alembic, its UI) goes into a venv of its own, .venv-mlflow.
MLFLOW_VENV := .venv-mlflow
MLFLOW_STAMP := $(MLFLOW_VENV)/.stamp
$(MLFLOW_STAMP):
	$(PYTHON) -m venv $(MLFLOW_VENV)
	$(MLFLOW_VENV)/bin/pip install -q 'mlflow==3.17.2'
	touch $@

bench-dashboard: $(TEST_STAMP) $(CHROMIUM_STAMP) $(MLFLOW_STAMP)
	$(BIN)/python benchmarks/dashboard_vs_mlflow.py --mlflow $(MLFLOW_VENV)/bin/mlflow

# Zeus's own simulator side by side (installs zeus==0.16.0 into a throwaway venv; 11 traces, ~25 min on
# 2 cores the first time; make bench passes --zeus-cache and reruns only greenml's side, ~4 min).
bench-zeus: $(TEST_STAMP)
	$(BIN)/python benchmarks/zeus_simulator.py --seeds 20

clean:
	rm -rf $(VENV) $(FLOWER_VENV) $(MLFLOW_VENV) .mypy_cache .ruff_cache .pytest_cache
