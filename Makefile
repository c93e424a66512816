# reprobot: make demo · make test · make lint · make bench
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Wheels that test environments install from (pip --no-index): the tests themselves never reach PyPI.
WHEELHOUSE := .reprobot/wheelhouse
# six stands in for a dependency of a tested project (tests/test_environment.py).
TEST_WHEELS := pytest pytest-timeout coverage six
# The interpreter test environments are built with (REPROBOT_SANDBOX_PYTHON's default): wheels must fit it.
SANDBOX_PY ?= /usr/bin/python3

.PHONY: demo test lint bench soak venv wheelhouse clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

$(WHEELHOUSE)/.stamp: $(STAMP) Makefile
	$(BIN)/python -m pip download -q --disable-pip-version-check --only-binary=:all: -d $(WHEELHOUSE) \
		--python-version "$$($(SANDBOX_PY) -c 'import sys; print("%d.%d" % sys.version_info[:2])')" $(TEST_WHEELS)
	touch $@

wheelhouse: $(WHEELHOUSE)/.stamp

demo: $(STAMP)
	$(BIN)/python examples/run_demo.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: lint wheelhouse
	$(BIN)/python -m pytest -q -p no:cacheprovider

# The soak suite, long (tests/test_soak.py; make test runs its short form). Bounded: pytest's timeout is set from it.
SOAK_SECONDS ?= 600
soak: $(STAMP) wheelhouse
	REPROBOT_SOAK_SECONDS=$(SOAK_SECONDS) $(BIN)/python -m pytest -q -s -p no:cacheprovider \
		--timeout=$$(( $(SOAK_SECONDS) + 900 )) tests/test_soak.py

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
