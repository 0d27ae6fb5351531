# Two commands matter on a fresh machine: `make demo` and `make test`.
# The editable install uses compat mode (a .pth adding the repo root to sys.path) so that Spark's static
# lookup of top-level pyspark_* modules (pkgutil.iter_modules) finds pyspark_samza_kafka without register().
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

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --config-settings editable_mode=compat -e '.[dev]'
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
