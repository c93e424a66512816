# reprobot: make demo · make test · make test-all · make lint · make docs · make bench
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Wheels that test environments install from (pip --no-index): the tests themselves never reach PyPI.
WHEELHOUSE := .reprobot/wheelhouse
# six stands in for a dependency of a tested project (tests/test_environment.py); setuptools and wheel
# build the source-only dependencies of tests/test_host_exec.py inside the sandbox.
TEST_WHEELS := pytest pytest-timeout coverage six setuptools wheel
# The last pytest before 8 and nose, for suites of their era (nose-style setup/teardown; tests/test_testrun_legacy.py).
OLD_PYTEST := 'pytest<8' nose
# The interpreter test environments are built with (REPROBOT_SANDBOX_PYTHON's default): wheels must fit it.
SANDBOX_PY ?= /usr/bin/python3

.PHONY: demo test test-all lint docs bench bench-data bench-apps soak venv wheelhouse clean system-packages image-wheels image base-image up down

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

$(WHEELHOUSE)/.stamp: $(STAMP) Makefile
	$(BIN)/python -m pip download -q --disable-pip-version-check --only-binary=:all: -d $(WHEELHOUSE) \
		--python-version "$$($(SANDBOX_PY) -c 'import sys; print("%d.%d" % sys.version_info[:2])')" $(TEST_WHEELS)
	$(BIN)/python -m pip download -q --disable-pip-version-check --only-binary=:all: -d $(WHEELHOUSE) \
		--python-version "$$($(SANDBOX_PY) -c 'import sys; print("%d.%d" % sys.version_info[:2])')" $(OLD_PYTEST)
	touch $@

wheelhouse: $(WHEELHOUSE)/.stamp

# The deploy image (issue 17): wheels of reprobot's dependencies, built on the host, so `docker build` needs no
# package index (tests/test_deploy.py builds the image from them); `make image` builds it on the local base.
IMAGE_WHEELS := .reprobot/image-wheels
$(IMAGE_WHEELS)/.stamp: $(STAMP)
	$(BIN)/python -m pip wheel -q --disable-pip-version-check --wheel-dir $(IMAGE_WHEELS) . 'setuptools>=77' wheel
	rm -f $(IMAGE_WHEELS)/reprobot-*.whl
	touch $@

image-wheels: $(IMAGE_WHEELS)/.stamp

image: image-wheels
	rm -f deploy/wheels/*.whl && cp $(IMAGE_WHEELS)/*.whl deploy/wheels/
	docker build -f deploy/Dockerfile -t reprobot/app:latest \
		--build-arg BASE_IMAGE="$$($(BIN)/python -c 'from sandboxes.baseimage import image_tag; print(image_tag())')" .

# The sandboxes' base image (debootstrap, then docker import; needs root), which the app image is built on.
base-image: $(STAMP)
	$(BIN)/reprobot sandbox build-base

# One Docker host (docs/operations.md#docker-compose): base image, app image, then web, workers and PostgreSQL
# from deploy/docker-compose.yml with the secrets of deploy/.env. The compose file's one-shot data-dir service
# gives the data dir to the containers' user; the workers join the docker socket's group.
COMPOSE ?= $(shell docker compose version >/dev/null 2>&1 && echo "docker compose" || echo docker-compose)
up: base-image image
	@test -f deploy/.env || { echo "make up: create deploy/.env first (cp deploy/reprobot.env.example deploy/.env)" >&2; exit 2; }
	cd deploy && DOCKER_GID="$$(stat -c %g /var/run/docker.sock)" \
		BASE_IMAGE="$$($(CURDIR)/$(BIN)/python -c 'from sandboxes.baseimage import image_tag; print(image_tag())')" \
		$(COMPOSE) -f docker-compose.yml up -d

down:
	cd deploy && $(COMPOSE) -f docker-compose.yml down

# A fresh machine first gets the system packages the bot needs (installed when root, else the one command to
# run is printed), before the virtualenv, which needs python3-venv.
system-packages:
	@.ci/system-packages --install demo

demo: system-packages
	@$(MAKE) --no-print-directory venv
	$(BIN)/python examples/run_demo.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# docs/configuration.md is generated from the settings table (bot/settings/table.py); a test fails while it is stale.
docs: $(STAMP)
	PYTHONPATH=$(CURDIR) $(BIN)/python -m bot.settings.docs > docs/configuration.md.new
	mv docs/configuration.md.new docs/configuration.md

# The suite runs on every core (pytest-xdist): TEST_WORKERS=0 runs it in one process, TEST_WORKERS=4 on four.
# Tests marked xdist_group run in one worker; what workers share (environments, PostgreSQL) is in
# tests/xdist_shared.py. `make test` leaves out the long scenarios (marker `long`: more Minetest reports,
# longer kill soaks), whose short siblings it runs; `make test-all` runs everything. TEST_ARGS adds options.
TEST_WORKERS ?= auto
TEST_ARGS ?=
PYTEST := $(BIN)/python -m pytest -q -p no:cacheprovider --durations=20 -n $(TEST_WORKERS) --dist loadgroup

test: lint wheelhouse image-wheels
	$(PYTEST) -m 'not long' $(TEST_ARGS)

test-all: lint wheelhouse image-wheels
	$(PYTEST) $(TEST_ARGS)

# The soak suite, long (tests/test_soak.py; make test runs its short form). Bounded: pytest's timeout is set from it.
SOAK_SECONDS ?= 600
soak: $(STAMP) wheelhouse
	REPROBOT_SOAK_SECONDS=$(SOAK_SECONDS) $(BIN)/python -m pytest -q -s -p no:cacheprovider \
		--timeout=$$(( $(SOAK_SECONDS) + 900 )) tests/test_soak.py

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

# QuixBugs cases rebuilt from the public repo at a pinned commit (override QUIXBUGS_URL / QUIXBUGS_REF, e.g. a
# local clone), in the format of ../shared/bench/quixbugs: `reprobot eval --bench $(BENCH_DATA)` runs them.
BENCH_DATA ?= bench/data/quixbugs
BENCH_SPLIT ?= all
# With MIRRORS=DIR (git mirrors fetched beforehand, DIR/<owner>+<name>/repo: nothing is fetched here) it instead
# rebuilds the mined real-bug cases from bench/data/recipes into $(REALBUGS_DATA) and verifies each in a sandbox
# (bench/data/mine.py; docs/benchmarks.md). A recipe whose mirror is absent fails unless MINE_FLAGS=--allow-missing.
REALBUGS_DATA ?= bench/data/realbugs
MINE_FLAGS ?=
bench-data: $(STAMP)
ifeq ($(strip $(MIRRORS)),)
	$(BIN)/python bench/data/build_quixbugs.py --out $(BENCH_DATA) --split $(BENCH_SPLIT)
else
	PYTHONPATH=$(CURDIR) $(BIN)/python bench/data/mine.py build --mirrors $(MIRRORS) --out $(REALBUGS_DATA) $(MINE_FLAGS)
endif

# The real-app cases (bench/apps, docs/benchmarks.md): each case's buggy and fixed PyPI releases installed in
# cached venvs ($$REPROBOT_BENCH_CACHE, default ~/.cache/reprobot-bench-apps), then every case checked by its
# scripted ground truth (the failure shows on the buggy release only). `python bench/app_repro.py --set apps`
# then measures the agent on them.
bench-apps: $(STAMP)
	$(BIN)/python bench/apps/verify.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
