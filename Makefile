# Two commands matter on a fresh machine: `make demo` and `make test`.
# The editable install uses compat mode (a .pth adding the repo root to sys.path) so that Spark's static
# lookup of top-level pyspark_* modules (pkgutil.iter_modules) finds pyspark_samza_kafka without register().
# The development kit (devkit/: Apache Kafka launcher, development broker, moto launcher, fixtures, pytest plugin, the demo) is a
# distribution of its own, installed editable next to the package; it is never in the runtime wheel.
# Both create the virtualenv at .venv when it is missing or a pyproject.toml changed.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

# Spark's Python workers must run the virtualenv's interpreter, not the system one.
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))

.PHONY: setup test demo lint options-doc wheel package clean check-java compat sanitize bench-tools

NATIVE_STAMP := $(VENV)/.native-reader
NATIVE_SRC   := setup.py $(wildcard spark_samza_source/kafka/executor/_native/*)

setup: $(STAMP) $(NATIVE_STAMP)

$(STAMP): pyproject.toml devkit/pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip "setuptools>=77"
	$(PY) -m pip install --quiet --config-settings editable_mode=compat -e '.[dev]' -e ./devkit
	touch $(STAMP)

# The native Kafka reader (setup.py), compiled in place next to its package: the editable install compiles it too,
# but only when the install runs; this rebuilds it whenever its sources change. Optional: without a C compiler or
# the Python headers it is skipped and reads use the Python path (nothing else is needed at build time: librdkafka
# is loaded when the reader runs).
$(NATIVE_STAMP): $(STAMP) $(NATIVE_SRC)
	$(PY) setup.py --quiet build_ext --inplace || echo "native Kafka reader not built: reads use the Python path"
	touch $(NATIVE_STAMP)

# Two pytest workers (pytest-xdist), each test file whole in one of them so module fixtures are built once: the
# suite waits far more than it computes (emulator event cadences, AWS's 5-second subscription rule, trigger
# intervals, JVM starts; ~9 CPU-minutes in ~17 wall-minutes with two workers), so a second worker nearly halves it
# on two cores. TEST_WORKERS=0 runs everything in this one process (a debugger, a single test).
TEST_WORKERS ?= 2
# pytest exits 5 when it collected no test: that must fail, never pass silently.
test: setup
	$(PY) -m pytest $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile) $(PYTEST_ARGS)

# The native Kafka reader under AddressSanitizer and UndefinedBehaviorSanitizer (not part of `make test`): the
# extension rebuilt instrumented (-fno-wrapv: Python's -fwrapv would define away the signed overflows UBSan is to
# find; any UB report aborts), the reader tests run against it, then the normal build is restored whatever the
# result. The interpreter is not instrumented, so libasan is preloaded; the pytest process drops LD_PRELOAD from
# its environment once started, so the broker and other children run without it; pytest captures at the sys level
# only, so a report (written to file descriptor 2 by the runtime) is shown. Leak checking is off: the
# interpreter's own allocations alive at exit would bury any report. Result: docs/contributing.md.
SANITIZE_TESTS ?= tests/integration/kafka/test_reader.py tests/integration/kafka/test_reader_differential.py \
                  tests/integration/kafka/test_reader_bad_input.py tests/integration/kafka/test_reader_fill_property.py \
                  tests/integration/kafka/test_reader_settings.py tests/integration/kafka/test_reader_compacted.py \
                  tests/integration/kafka/test_reader_transactions.py
SANITIZE_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -fno-wrapv -g -O1

sanitize: setup
	@command -v gcc >/dev/null || { echo "make sanitize: needs gcc (with libasan and libubsan)"; exit 1; }
	CFLAGS="$(SANITIZE_FLAGS)" LDFLAGS="-fsanitize=address,undefined" $(PY) setup.py --quiet build_ext --inplace \
	  --force --build-temp build/sanitize --build-lib build/sanitize-lib
	LD_PRELOAD="$$(gcc -print-file-name=libasan.so)" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(PY) -c 'import os, sys, pytest; os.environ.pop("LD_PRELOAD"); sys.exit(pytest.main(sys.argv[1:]))' \
	  -p no:cacheprovider --capture=sys $(SANITIZE_TESTS) $(PYTEST_ARGS); status=$$?; \
	$(PY) setup.py --quiet build_ext --inplace --force; exit $$status

demo: check-java setup
	$(PY) -m samza_devkit.demo

# Spark 4 runs on Java 17 or newer: say so, and what to install, before anything else starts.
check-java:
	@v=$$($${JAVA_HOME:+$$JAVA_HOME/bin/}java -version 2>&1 | sed -n 's/.* version "\([0-9][0-9]*\).*/\1/p' | head -1); \
	if [ -z "$$v" ]; then \
	  echo "make demo: no Java found. Spark needs Java 17 or newer: install a JDK, e.g."; \
	  echo "  Debian/Ubuntu: sudo apt-get install openjdk-17-jre-headless"; \
	  echo "  macOS:         brew install openjdk@17"; \
	  echo "and make sure 'java' is on PATH (or JAVA_HOME points at it)."; exit 1; \
	elif [ "$$v" -lt 17 ]; then \
	  echo "make demo: Java $$v found, Spark needs Java 17 or newer: install a JDK 17+, e.g."; \
	  echo "  Debian/Ubuntu: sudo apt-get install openjdk-17-jre-headless"; \
	  echo "  macOS:         brew install openjdk@17"; \
	  echo "and put it first on PATH (or set JAVA_HOME)."; exit 1; \
	fi

# The PySpark-facing tests against each PySpark minor the package allows, each from a virtualenv of its own
# (build/compat-<version>): the unit tests, streaming and batch reads of each source, the limits a source applies
# itself (maxOffsetsPerTrigger, maxRecordsPerShard: test_source_reads.py, test_kinesis_batch_limits.py), Spark
# Connect. The latest patch of every minor in the range pyproject.toml claims. What
# passed goes into docs/deployment.md, "Compatibility". COMPAT_PYSPARK / COMPAT_TESTS select.
COMPAT_PYSPARK ?= 4.0.5 4.1.4 4.2.1 4.3.0
COMPAT_TESTS   ?= tests/unit tests/integration/kafka/test_source_reads.py tests/integration/kafka/test_batch_reads.py \
                  tests/integration/kinesis/test_kinesis_source_reads.py tests/integration/kinesis/test_kinesis_batch_limits.py \
                  tests/integration/tooling/test_spark_connect.py
# Kinesis on moto only: the emulators' differences are not the PySpark version's (make test runs them all), and
# kinesalite and kinesis-mock would add minutes to every version.
COMPAT_PYTEST_ARGS ?= -k "not [kinesalite] and not [kinesis-mock]"

# A virtualenv is installed again only when a pyproject.toml changed since (its .installed
# stamp): pip's resolve takes minutes per version even with a warm cache. Every version runs whatever another did;
# each one's pytest output goes to build/compat-<version>/pytest.log, and the summary (build/compat-summary.txt)
# says what passed on each. The target fails if any version failed.
compat:
	@rm -f build/compat-summary.new; failed=""; for v in $(COMPAT_PYSPARK); do \
	  venv=build/compat-$$v; echo "== PySpark $$v ($$venv)"; start=$$(date +%s); \
	  test -x $$venv/bin/python || $(PYTHON) -m venv $$venv || exit 1; \
	  if [ ! -f $$venv/.installed ] || [ -n "$$(find pyproject.toml devkit/pyproject.toml -newer $$venv/.installed)" ]; then \
	    $$venv/bin/python -m pip install --quiet --config-settings editable_mode=compat "pyspark[connect]==$$v" \
	      -e '.[test]' -e ./devkit && touch $$venv/.installed || exit 1; \
	  fi; \
	  if PYSPARK_PYTHON=$(CURDIR)/$$venv/bin/python PYSPARK_DRIVER_PYTHON=$(CURDIR)/$$venv/bin/python \
	    $$venv/bin/python -m pytest -q -p no:cacheprovider $(COMPAT_TESTS) $(COMPAT_PYTEST_ARGS) $(PYTEST_ARGS) > $$venv/pytest.log 2>&1; \
	  then result=passed; else result=FAILED; failed="$$failed $$v"; fi; \
	  grep -E '^(FAILED|ERROR) ' $$venv/pytest.log; \
	  echo "PySpark $$v: $$result: $$(tail -1 $$venv/pytest.log) ($$(( $$(date +%s) - start )) s with the install)" \
	    | tee -a build/compat-summary.new; \
	done; mv build/compat-summary.new build/compat-summary.txt; \
	if [ -n "$$failed" ]; then echo "make compat: failed on PySpark$$failed (logs: build/compat-<version>/pytest.log)"; exit 1; fi

# The benchmarks' outside anchor for Kafka reads (kcat, librdkafka's own consumer) from Debian's packages;
# only the benchmarks use it, and they say so and leave its column out where it is missing.
bench-tools:
	@command -v kcat >/dev/null || (apt-get install -y -q kcat || sudo apt-get install -y -q kcat)

lint: $(STAMP)
	$(VENV)/bin/ruff check spark_samza_source pyspark_samza_kafka pyspark_samza_kinesis devkit tests benchmarks examples conftest.py
	$(VENV)/bin/mypy

# docs/options.md is generated from the option spec (spark_samza_source/options/); a unit test fails while it is stale.
options-doc: $(STAMP)
	$(PY) -m spark_samza_source.options.reference > docs/options.md

# Where `make wheel` and `make package` write (overridable: the spark-submit tests build into a temp dir).
DIST         ?= dist
PACKAGE_VENV ?= build/package-venv
PACKAGE      ?= $(DIST)/spark-samza-source-env.tar.gz
PACKAGE_EXTRAS ?= [spark]

# build/lib* and build/temp* are removed first: setuptools would otherwise put stale modules (or a stale compiled
# extension) from an earlier build in the wheel.
# A platform wheel (the native Kafka reader compiled in) where a C compiler exists, else a pure one (the Python
# read path): both work.
wheel: $(STAMP)
	rm -rf build/lib* build/temp* build/bdist.* $(DIST)/spark_samza_source-*.whl
	$(PY) -m pip wheel --quiet --no-deps --wheel-dir $(DIST) .

# A relocatable environment for `spark-submit --archives $(PACKAGE)#environment` (see docs/deployment.md,
# "Deploying with spark-submit"): a clean virtualenv with the wheel (not editable) and its runtime dependencies only, packed by
# venv-pack. Its bin/python links to the interpreter that made it: that Python must be at the same path on
# every node. pip's cache makes a rebuild take about a minute. The archive (about 525 MiB) holds PySpark (the wheel's
# `spark` extra, PACKAGE_EXTRAS); where the cluster provides Spark, PACKAGE_EXTRAS= leaves it out.
package: wheel
	rm -rf $(PACKAGE_VENV) $(PACKAGE)
	$(PYTHON) -m venv $(PACKAGE_VENV)
	$(PACKAGE_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PACKAGE_VENV)/bin/python -m pip install --quiet "$$(ls $(DIST)/spark_samza_source-*.whl)$(PACKAGE_EXTRAS)"
	$(VENV)/bin/venv-pack --prefix $(PACKAGE_VENV) --output $(PACKAGE) --quiet $(VENV_PACK_FLAGS)
	chmod 644 $(PACKAGE)
	@echo "packed $(PACKAGE)"

clean:
	rm -rf $(VENV) dist build *.egg-info .pytest_cache
