# The two commands a new user types: `make run` (the app) and `make test` (everything CI runs).
PYTHON ?= python3
VENV := .venv
SGLANG_ENV := .venv-sglang
# The older releases the differential corpus also runs on (sglang 0.5.23 is SGLANG_ENV);
# each is its own CPU environment, built once (~70 s) and cached like SGLANG_ENV.
TEST_RELEASES := 0.5.19 0.5.21
ALL_RELEASES := 0.5.19 0.5.20 0.5.21 0.5.22
RELEASE_ENVS := $(foreach v,$(TEST_RELEASES),.venv-sglang-$(v)/.installed)
RELEASE_PYTHONS := $(foreach v,$(TEST_RELEASES),$(CURDIR)/.venv-sglang-$(v)/bin/python)

# A shell that sets PYTHONDONTWRITEBYTECODE makes every process the tests start compile
# sglaunch from source again (~0.2 s each, hundreds of them): the bytecode cache is kept
# (__pycache__/ is git-ignored), the way a user's own installation has it.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: run test test-fast envs source-tree slurm-up slurm-down slurm-status test-gpu lint typecheck imports format bench screenshots schema clean

run: $(VENV)/.installed
	$(VENV)/bin/sglaunch $(ARGS)

# The tests by tier (tests/README.md): unit and functional (no server, no sglang), sglang
# (sglang's own code in the CPU sglang environments) and most of process (services, launches,
# hostile input) run on both cores with pytest-xdist; the process tests marked `serial`
# (timed monitors, a real pty, the Slurm cluster, run watchers: tests/process/conftest.py)
# run after them on their own, since they do not share the machine well.
PYTEST_WORKERS ?= 2
SGLANG_VARS = SGLAUNCH_SGLANG_PYTHON=$(CURDIR)/$(SGLANG_ENV)/bin/python \
	SGLAUNCH_SGLANG_PYTHONS="$(RELEASE_PYTHONS)"

# The CPU sglang environments the sglang and process tiers run: torch 2.13 CPU + sglang 0.5.23,
# and 0.5.19 and 0.5.21 for the differential corpora (~1.5 GB and about a minute each, once).
envs: $(VENV)/.installed $(SGLANG_ENV)/.installed $(RELEASE_ENVS)

# The three sglang environments build side by side, and the static checks run beside them
# (each needs only .venv): on a fresh clone that is most of the environments' minutes saved.
test: $(VENV)/.installed
	$(MAKE) --no-print-directory -j4 --output-sync=target envs lint typecheck imports
	$(SGLANG_VARS) $(VENV)/bin/pytest -n $(PYTEST_WORKERS) --dist loadgroup -m 'not gpu and not serial' \
		tests/unit tests/functional tests/sglang tests/process $(PYTEST_ARGS)
	$(SGLANG_VARS) scripts/slurm/cluster.sh around \
		$(VENV)/bin/pytest -m 'serial and not gpu' tests/process $(PYTEST_ARGS)

# For contributors: every test that starts no server and no sglang interpreter (the unit and
# functional tiers: rules, memory arithmetic, flags, profiles, facts, the session, the CLI,
# the TUI with fakes), on both cores; no sglang environment needed.
test-fast: $(VENV)/.installed
	env -u SGLAUNCH_SGLANG_PYTHON -u SGLAUNCH_SGLANG_PYTHONS \
		$(VENV)/bin/pytest -n $(PYTEST_WORKERS) tests/unit tests/functional $(PYTEST_ARGS)

# The Slurm tests' two-node cluster on this machine (root: network namespaces, daemons;
# Debian's slurm-wlm and munge from apt the first time). `make test` starts it around the
# process tier and stops it after; these keep one running between test runs.
slurm-up:
	scripts/slurm/cluster.sh up

slurm-down:
	scripts/slurm/cluster.sh down

slurm-status:
	scripts/slurm/cluster.sh status && echo "the Slurm test cluster is up; $$(scripts/slurm/cluster.sh env)"

# On a machine with an NVIDIA GPU: the tests marked `gpu` (they fail, not skip, without one).
test-gpu: $(VENV)/.installed $(SGLANG_ENV)/.installed
	SGLAUNCH_SGLANG_PYTHON=$(CURDIR)/$(SGLANG_ENV)/bin/python $(VENV)/bin/pytest -m gpu tests/sglang $(PYTEST_ARGS)

lint:
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# mypy and import-linter read the source by import name: build/src lays it out so
# (validators/ and tui/ install as sglaunch.validators and sglaunch.tui). Made once per make,
# before both: `make test` runs them side by side, and two writers of one tree race.
source-tree: $(VENV)/.installed
	$(VENV)/bin/python scripts/source_tree.py >/dev/null

typecheck: source-tree
	cd build/src && $(CURDIR)/$(VENV)/bin/mypy --config-file $(CURDIR)/pyproject.toml -p sglaunch

imports: source-tree
	cd build/src && PYTHONPATH=. $(CURDIR)/$(VENV)/bin/lint-imports --no-cache $(CURDIR)/pyproject.toml

format:
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: $(VENV)/.installed $(SGLANG_ENV)/.installed
	$(VENV)/bin/python bench/validate.py
	SGLAUNCH_SGLANG_PYTHON=$(CURDIR)/$(SGLANG_ENV)/bin/python $(VENV)/bin/python bench/oracle.py
	$(VENV)/bin/python bench/startup.py
	$(VENV)/bin/python bench/fit.py
	$(VENV)/bin/python bench/monitor.py

screenshots: $(VENV)/.installed
	$(VENV)/bin/python scripts/make_screenshots.py

# Regenerate the bundled facts (flag schema, model types) of every supported release from
# its CPU sglang environment, where each release has the lines the rules cite, and the
# catalogue of every error its argument resolution can raise (scripts/sglang_errors.py).
schema: $(SGLANG_ENV)/.installed $(foreach v,$(ALL_RELEASES),.venv-sglang-$(v)/.installed)
	$(SGLANG_ENV)/bin/python sglaunch/in_sglang/extract_flags.py --no-help -o sglaunch/flags/data/schema-0.5.23.json
	$(SGLANG_ENV)/bin/python sglaunch/in_sglang/extract_model_types.py -o sglaunch/facts/data/model-types-0.5.23.json
	for v in $(ALL_RELEASES); do \
		.venv-sglang-$$v/bin/python sglaunch/in_sglang/extract_flags.py --no-help -o sglaunch/flags/data/schema-$$v.json && \
		.venv-sglang-$$v/bin/python sglaunch/in_sglang/extract_model_types.py -o sglaunch/facts/data/model-types-$$v.json || exit 1; \
	done
	$(VENV)/bin/python scripts/sglang_lines.py -o validators/sourcelines_table.py \
		--src 0.5.23=$$($(SGLANG_ENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') \
		$(foreach v,$(ALL_RELEASES),--src $(v)=$$(.venv-sglang-$(v)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'))
	$(VENV)/bin/python scripts/sglang_errors.py -o sglaunch/catalogue/data/errors.json.gz --src 0.5.23=$$($(SGLANG_ENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') $(foreach v,$(ALL_RELEASES),--src $(v)=$$(.venv-sglang-$(v)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'))

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

# One older release's CPU environment: make .venv-sglang-0.5.20/.installed
.venv-sglang-%/.installed: $(VENV)/.installed sglaunch/oracle/sglang-cpu.txt sglaunch/oracle/sglang-cpu-%.txt
	$(VENV)/bin/python -m sglaunch.oracle.setup_env --version $* --dir .venv-sglang-$* \
		$(if $(TORCH_INDEX_URL),--torch-index-url $(TORCH_INDEX_URL))
	touch $@

clean:
	rm -rf $(VENV) $(SGLANG_ENV) .venv-sglang-* build dist *.egg-info
