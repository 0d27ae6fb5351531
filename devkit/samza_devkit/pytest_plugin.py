"""pytest plugin, loaded only where asked (``pytest_plugins = ["samza_devkit.pytest_plugin"]`` in a conftest.py,
or ``pytest -p samza_devkit.pytest_plugin``): fixtures backed by real local parts.

- ``spark``: a session-scoped local SparkSession (``local[2]``), Python workers on this interpreter.
- ``kafka_broker``: Apache Kafka, started from jars fetched from Maven Central (or ``SAMZA_TEST_KAFKA_BOOTSTRAP``);
  ``dev_kafka_broker``: the Kafka wire-protocol development broker. A failed test names the broker's log.
- ``kafka_cluster``: three replicated Apache Kafka nodes per module, each in a network namespace of its own.
- ``spark_cluster``: a Spark standalone cluster, a worker per network namespace, with its own Apache Kafka broker.
- ``moto_server``: moto in server mode on loopback for Kinesis and DynamoDB (or ``SAMZA_TEST_KINESIS_ENDPOINT``).
- ``kinesis_mock_endpoint`` / ``kinesis_mock_bridge``: kinesis-mock (enhanced fan-out) behind the devkit's bridge.
- ``kq`` / ``ks``: a live samza-kafka / samza-kinesis query harness per test (``kinesis_endpoint``: moto, or
  kinesalite or kinesis-mock when parametrized so).
"""

import os

import pytest

from .aws_fixtures import *  # noqa: F401,F403
from .cluster_fixtures import *  # noqa: F401,F403
from .kafka_cluster_fixtures import *  # noqa: F401,F403
from .kafka_fixtures import *  # noqa: F401,F403
from .kinesis_mock_fixtures import *  # noqa: F401,F403
from .query_fixtures import *  # noqa: F401,F403
from .s3_fixtures import *  # noqa: F401,F403
from .spark_fixtures import *  # noqa: F401,F403


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test that used a Kafka broker the devkit started names that broker's own log (Apache Kafka's log4j
    file, the development broker's stderr), where the broker's side of the failure is."""
    report = yield
    if report.failed:
        logs = {str(path) for path in (getattr(item.funcargs.get(name), "log_path", None)
                                       for name in getattr(item, "fixturenames", ())
                                       if "kafka_broker" in name) if path}
        cluster = item.funcargs.get("kafka_cluster") if hasattr(item, "funcargs") else None
        if cluster is not None:
            logs.update(str(path) for path in cluster.log_paths())
        if logs:
            report.sections.append(("Kafka broker log", "\n".join(sorted(logs))))
    return report


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """A test's own time limit (pytest-timeout's, from its marker or the ini) scales like every wait in it
    (:mod:`samza_devkit.waits`): on a busy machine the limit a quiet one needs would stop a test that is only slow.
    Runs before pytest-timeout reads the limit, as a marker of the item's own that comes first."""
    from .waits import time_scale

    scale = time_scale()
    marker = item.get_closest_marker("timeout")
    base = marker.args[0] if marker is not None and marker.args else getattr(item.config, "_env_timeout", None)
    if scale > 1 and isinstance(base, (int, float)) and base > 0:
        item.add_marker(pytest.mark.timeout(base * scale), append=False)
    yield


def pytest_addoption(parser):
    parser.addoption("--cpu-report", metavar="FILE", default=None,
                     help="append each test module's wall and CPU seconds (this process and its descendants) to FILE "
                          "(samza_devkit.cpu_accounting; python -m samza_devkit.cpu_accounting FILE sums it up)")


def pytest_collection_modifyitems(session, config, items):
    """The longest test modules first (:mod:`samza_devkit.module_order`), by ``tests/module_times.tsv``."""
    from .module_order import longest_first, read_module_times

    items[:] = longest_first(items, read_module_times(config.rootpath / "tests" / "module_times.tsv"))


# The suite's JVMs (Spark drivers and executors, Kafka brokers and tools, KCL workers) live seconds to minutes and
# read kilobytes: C2's optimised code never pays back the CPU its compiler threads spend, and on two shared cores that
# CPU is the suite's wall time. C1 alone cuts a module's CPU by about a quarter. ``SAMZA_TEST_FULL_JIT=1`` keeps the
# JVM's default (benchmarks never run under this plugin, so their figures are the JVM's usual ones).
_SHORT_LIVED_JVM = "-XX:TieredStopAtLevel=1"


def _short_lived_jvms() -> None:
    if os.environ.get("SAMZA_TEST_FULL_JIT") == "1":
        return
    current = os.environ.get("JDK_JAVA_OPTIONS", "")
    if _SHORT_LIVED_JVM not in current:
        os.environ["JDK_JAVA_OPTIONS"] = f"{current} {_SHORT_LIVED_JVM}".strip()


def pytest_configure(config):
    _short_lived_jvms()
    _shared_jvm_classes(config)
    report = config.getoption("--cpu-report", default=None)
    if report:
        from .cpu_accounting import ModuleCpu

        config._samza_module_cpu = ModuleCpu(report)


def _shared_jvm_classes(config) -> None:
    """Class-data sharing for every JVM the run starts (:mod:`samza_devkit.jvm_class_share`): set up once, by the
    process that starts the others (pytest-xdist's workers inherit its ``JAVA_HOME`` and ``PATH``), before any JVM
    starts; the archives are made beside the first tests when no run before made them."""
    if hasattr(config, "workerinput"):
        return
    from .jvm_class_share import install, train

    archives = install()
    if archives is not None:
        train(archives)


def pytest_runtest_setup(item):
    accounting = getattr(item.config, "_samza_module_cpu", None)
    if accounting is not None:
        accounting.test_starts(item.nodeid.split("::", 1)[0])


def pytest_unconfigure(config):
    accounting = getattr(config, "_samza_module_cpu", None)
    if accounting is not None:
        accounting.flush()
