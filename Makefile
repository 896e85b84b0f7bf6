# Two commands for a fresh machine (see README.md):
#   make demo   set up .venv, then run the demo (checkpoint -> ONNX -> engine -> Detector -> benchmark)
#   make test   set up .venv, then run the test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.y9-installed
# torch first, pinned to the CPU build that lies on the CI machines' disk; then the project with its extras.
TORCH  ?= torch==2.13.0
EXTRAS ?= export,train,trt-rtx,dev
PYTEST_WORKERS ?= 2

.PHONY: setup demo test lint clean

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install -q --disable-pip-version-check "$(TORCH)"
	$(BIN)/python -m pip install -q --disable-pip-version-check -e ".[$(EXTRAS)]"
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/python samples/demo.py --out demo-out

test: $(STAMP)
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --durations=15

lint: $(STAMP)
	$(BIN)/ruff check y9deploy y9train tests samples benchmarks

clean:
	rm -rf $(VENV) demo-out .pytest_cache
