"""The ``spark`` fixture: one real local SparkSession per test session."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import pytest

from .waits import scaled

__all__ = ["spark", "make_local_spark", "no_query_outlives_its_test"]

_REPO_CONF = Path(__file__).resolve().parents[2] / "conf"


def make_local_spark(app_name: str = "spark-samza-source-tests", extra_conf: dict[str, str] | None = None,
                     kafka_connector: bool = False, master: str = "local[2,4]"):
    """Build a quiet ``local[2]`` SparkSession (or one on ``master``: a cluster's driver) whose Python workers run
    this very interpreter.

    Spark's Python workers must import this package (sources are pickled by reference), so they must run the
    virtualenv's interpreter: ``PYSPARK_PYTHON`` is set here unless the caller already set it.
    ``kafka_connector``: Spark's own Kafka source (``format("kafka")``) on the session's classpath
    (``spark_kafka_connector``; jars can only be added before the session starts).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # everything here is on loopback
    from pyspark.sql import SparkSession

    builder = (
        # local[2, 4]: two cores, and a failed task is retried (up to 4 attempts) as on a cluster
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "2g")
        # a query stopping on a loaded machine may need longer than a quiet one's 30 s (samza_devkit.waits)
        .config("spark.sql.streaming.stopTimeout", f"{round(scaled(30))}s")
        # Python workers (and collect's result socket) on Unix domain sockets, not loopback TCP: a TCP port the
        # driver opens for a worker to connect back to comes from the ephemeral range, where a client of a server
        # a test stopped (moto, kinesalite, a bridge) may still be reconnecting; meeting it, Spark fails the
        # worker with "Authentication failed" (seen in suite runs). PySpark 4.1.0 and later read the setting (their
        # workers, the streaming source runner among them, and collect's result socket); 4.0 has no such setting
        # and keeps loopback TCP: the key sits unused in the conf (make compat runs the tests on 4.0 with it), and
        # the flake this avoids stays possible there.
        .config("spark.python.unix.domain.socket.enabled", "true")
    )
    log4j = _REPO_CONF / "log4j2.properties"
    if log4j.exists():
        opt = f"-Dlog4j.configurationFile=file:{log4j}"
        builder = builder.config("spark.driver.extraJavaOptions", opt).config("spark.executor.extraJavaOptions", opt)
    if kafka_connector:
        from .spark_kafka_connector import spark_kafka_connector_conf

        builder = builder.config(map=spark_kafka_connector_conf())
    for key, value in (extra_conf or {}).items():
        builder = builder.config(key, value)
    with _workers_forked_from_a_preloaded_interpreter():
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session


_fork_server_env: dict[str, str] | None = None
_fork_server_started = False


@contextlib.contextmanager
def _workers_forked_from_a_preloaded_interpreter():
    """While the session (its JVM and SparkContext) starts, ``PYSPARK_PYTHON`` and ``PYSPARK_DRIVER_PYTHON`` are the
    fork server's client (:mod:`samza_devkit.python_fork_server`: why Spark's driver-side Python workers need it on
    a busy machine); the JVM keeps that environment. Afterwards this process's environment is as before, so the
    drivers, spark-submit runs and packaged environments that tests start as subprocesses run the interpreter they
    name. Only under pytest (and the drivers its tests start): the demo and the benchmarks run Spark's workers as
    users get them."""
    global _fork_server_env, _fork_server_started
    if "PYTEST_CURRENT_TEST" not in os.environ:  # the demo and the benchmarks run Spark as users do
        yield
        return
    if not _fork_server_started:
        from .python_fork_server import start, wait_ready

        _fork_server_env, _fork_server_started = start(os.environ["PYSPARK_PYTHON"]), True
        # before the JVM asks for its first worker: a client that finds no server yet runs a fresh interpreter,
        # the very start that misses Spark's 10 s on a busy machine
        _fork_server_env = wait_ready(_fork_server_env)
    saved = {key: os.environ.get(key) for key in (_fork_server_env or {})}
    os.environ.update(_fork_server_env or {})
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="session")
def spark():
    # Spark's Kafka source too: the tests that set samza-kafka beside it share the session (one per process)
    session = make_local_spark(kafka_connector=True)
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def no_query_outlives_its_test(request):
    """After every test that used ``spark``, stop the queries it left running.

    A test that fails before its own ``query.stop()`` would otherwise leave its query running into the next test,
    where it holds the job's lease (same ``job.name`` in a module's harness) and fails that test too.
    """
    yield
    if "spark" in request.fixturenames:
        from .query_harness import stop_active_queries

        stop_active_queries(request.getfixturevalue("spark"))
