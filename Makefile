# The two commands a new user types: `make run` (the app) and `make test` (everything CI runs).
PYTHON ?= python3
VENV := .venv
SGLANG_ENV := .venv-sglang

.PHONY: run test test-gpu lint typecheck imports format bench screenshots schema clean

run: $(VENV)/.installed
	$(VENV)/bin/sglaunch $(ARGS)

# The oracle tests run sglang's real resolution, so the test target builds the
# CPU sglang environment (torch 2.13 CPU + sglang 0.5.23, ~1.5 GB, about a minute).
test: $(VENV)/.installed $(SGLANG_ENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(MAKE) --no-print-directory typecheck imports
	SGLAUNCH_SGLANG_PYTHON=$(CURDIR)/$(SGLANG_ENV)/bin/python $(VENV)/bin/pytest $(PYTEST_ARGS)

# On a machine with an NVIDIA GPU: the tests marked `gpu` (they fail, not skip, without one).
test-gpu: $(VENV)/.installed $(SGLANG_ENV)/.installed
	SGLAUNCH_SGLANG_PYTHON=$(CURDIR)/$(SGLANG_ENV)/bin/python $(VENV)/bin/pytest -m gpu $(PYTEST_ARGS)

lint:
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# mypy and import-linter read the source by import name: build/src lays it out so
# (validators/ and tui/ install as sglaunch.validators and sglaunch.tui)
typecheck: $(VENV)/.installed
	$(VENV)/bin/python scripts/source_tree.py >/dev/null
	cd build/src && $(CURDIR)/$(VENV)/bin/mypy --config-file $(CURDIR)/pyproject.toml -p sglaunch

imports: $(VENV)/.installed
	$(VENV)/bin/python scripts/source_tree.py >/dev/null
	cd build/src && PYTHONPATH=. $(CURDIR)/$(VENV)/bin/lint-imports --no-cache $(CURDIR)/pyproject.toml

format:
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: $(VENV)/.installed $(SGLANG_ENV)/.installed
	$(VENV)/bin/python bench/validate.py
	SGLAUNCH_SGLANG_PYTHON=$(CURDIR)/$(SGLANG_ENV)/bin/python $(VENV)/bin/python bench/oracle.py
	$(VENV)/bin/python bench/startup.py
	$(VENV)/bin/python bench/monitor.py

screenshots: $(VENV)/.installed
	$(VENV)/bin/python scripts/make_screenshots.py

# Regenerate the bundled facts (flag schema, model types) from the CPU sglang environment.
schema: $(SGLANG_ENV)/.installed
	$(SGLANG_ENV)/bin/python sglaunch/flags/extract.py --no-help -o sglaunch/flags/data/schema-0.5.23.json
	$(SGLANG_ENV)/bin/python sglaunch/facts/extract_model_types.py -o sglaunch/facts/data/model-types-0.5.23.json

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q -e '.[dev]'
	touch $@

# TORCH_INDEX_URL: where pip finds the CPU build of torch when PyPI's default is the CUDA
# one (Linux): make test TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
$(SGLANG_ENV)/.installed: $(VENV)/.installed sglaunch/oracle/sglang-cpu.txt
	$(VENV)/bin/python -m sglaunch.oracle.setup_env --dir $(SGLANG_ENV) \
		$(if $(TORCH_INDEX_URL),--torch-index-url $(TORCH_INDEX_URL))
	touch $@

clean:
	rm -rf $(VENV) $(SGLANG_ENV) build dist *.egg-info
