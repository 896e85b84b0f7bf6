# Two commands for a fresh machine (see README.md):
#   make demo   set up .venv, then run the demo (embedded model -> ONNX -> engine -> Detector -> benchmark)
#   make test   set up .venv, then run the test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.y9-installed
# torch first, pinned to the CPU build that lies on the CI machines' disk; then the project with its extras.
TORCH  ?= torch==2.13.0
EXTRAS ?= export,train,trt-rtx,serve,track,dev
# 3 workers measured no faster on the 2-core box (a fresh clone's make test: 496.7 s against 492.8-494.9 s with 2)
PYTEST_WORKERS ?= 2
# One torch/OpenMP thread per test process: with 2 workers on 2 cores, more threads only contend (the suite ran
# 36% faster on a slice of its heaviest tests with 1 than with the default, on the 2-core box).
TEST_THREADS ?= 1

.PHONY: setup demo test lint clean

# --no-compile: Python compiles a module the first time it is imported instead of every installed file up front
# (the set-up took 54 s instead of 38 s on the 2-core box); demo and test let Python write those compiled files
# (PYTHONDONTWRITEBYTECODE cleared for them), else every process would compile torch again.
PIP    := $(BIN)/python -m pip install -q --disable-pip-version-check --no-compile
RUN    := PYTHONDONTWRITEBYTECODE=

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip
	$(PIP) "$(TORCH)"
	$(PIP) -e ".[$(EXTRAS)]"
	# A Triton server for tests/deploy/test_triton.py: nvidia-pytriton's wheel bundles tritonserver; it pins
	# numpy<2, so it is only downloaded (never installed); tests/deploy/triton_server.py unpacks both wheels.
	$(BIN)/python -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
		-d $(VENV)/wheels "nvidia-pytriton==0.7.0" "numpy==1.26.4"
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(RUN) $(BIN)/python samples/demo.py --out demo-out

test: $(STAMP)
	$(RUN) OMP_NUM_THREADS=$(TEST_THREADS) $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist worksteal --durations=15

lint: $(STAMP)
	$(BIN)/ruff check y9 y9core y9train y9deploy y9cli tests samples benchmarks

clean:
	rm -rf $(VENV) demo-out .pytest_cache
