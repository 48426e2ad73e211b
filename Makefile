# Two commands for a fresh machine: `make demo` and `make test`. Both set up what they need, once.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.promem-installed

.PHONY: setup sysdeps demo test bench clean

setup: $(STAMP) sysdeps

# torch first, pinned to the CPU build, so that no later requirement pulls a CUDA wheel.
$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo ">> installing torch 2.13.0 (CPU) and pinned requirements into $(VENV)"
	$(BIN)/python -m pip install -q --disable-pip-version-check torch==2.13.0
	$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
	@touch $(STAMP)

sysdeps:
	@bash tools/sysdeps.sh

demo: setup
	$(BIN)/promem demo

test: setup
	bash tools/run_tests.sh

clean:
	rm -rf $(VENV) .cache runs demo-out
