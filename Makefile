# Two commands matter on a fresh machine: `make demo` and `make test`.
# Both create the virtualenv at .venv when it is missing or pyproject.toml changed.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

# Spark's Python workers must run the virtualenv's interpreter, not the system one.
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))

.PHONY: setup test demo lint wheel clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# pytest exits 5 when it collected no test: that must fail, never pass silently.
test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

demo: $(STAMP)
	$(PY) -m spark_samza_source.demo

lint: $(STAMP)
	$(VENV)/bin/ruff check spark_samza_source pyspark_samza_kafka pyspark_samza_kinesis tests benchmarks

wheel: $(STAMP)
	$(PY) -m pip wheel --no-deps --wheel-dir dist .

clean:
	rm -rf $(VENV) dist build *.egg-info .pytest_cache
