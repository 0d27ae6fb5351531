"""Deploying with spark-submit: ``make wheel``, ``make package`` and ``examples/kafka_orders_app.py``.

The application never calls ``register()`` and never imports ``spark_samza_source``: ``samza-kafka`` is found
only because the wheel installs the top-level module ``pyspark_samza_kafka`` into the interpreter Spark runs.
Each run reads a topic of the session's Apache Kafka broker with ``Trigger.AvailableNow`` and prints ``RESULT``
and ``PYTHON`` lines that are checked here.

- The wheel and the packed environment are built once per session by the Makefile itself (into a temp dir);
  the clean virtualenv that ``make package`` packs is the "fresh virtualenv with the wheel pip-installed".
- Packed environment: ``local-cluster[1,2,1024]`` (a worker and an executor JVM of their own, as on YARN,
  Kubernetes or standalone), so the executor unpacks ``--archives ...#environment`` in its working directory and
  ``PYSPARK_PYTHON=./environment/bin/python`` runs the shipped copy. Plain ``local[N]`` cannot show that: its
  executor is the driver JVM, Python workers start in the driver's working directory, and the archive is
  unpacked under SparkFiles' root instead (``./environment/bin/python``: "No such file or directory").
- Control: the same application with a Python that lacks the wheel fails with ``DATA_SOURCE_NOT_FOUND``.
- Release wheels (``make dist-check``, which names ``make dist``'s directory in ``SAMZA_RELEASE_DIST``; skipped
  elsewhere): the x86_64 manylinux wheel and the pure wheel, each packed by ``make package PACKAGE_WHEEL=...``
  into a clean virtualenv, read there through their own path (``release_probe.py``: native, and Python with the
  reason said at import), and spark-submit ships each packed environment to an executor that reads every record
  (``readPath=native`` for the manylinux wheel, so a reader that does not load fails the tasks).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from samza_devkit.kafka_helpers import create_topic, produce, unique_topic

pytestmark = [pytest.mark.spark, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]
APP = REPO / "examples" / "kafka_orders_app.py"
PROBE = Path(__file__).with_name("release_probe.py")
LOG4J = REPO / "conf" / "log4j2.properties"
PARTITIONS, PER_PARTITION, MAX_PER_TRIGGER = 4, 50, 80
SUBMIT_TIMEOUT_S = 300


@dataclass(frozen=True)
class Package:
    wheel: Path
    archive: Path
    venv: Path  # the clean virtualenv make package packed: the wheel and its runtime dependencies, pip-installed


def _say(text: str) -> None:
    print(f"[spark-submit tests] {text}", flush=True)


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: nothing from this test run or `make test` leaks into spark-submit."""
    env = {k: v for k, v in os.environ.items()
           if k not in {"PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_HOME", "PYTHONPATH", "VIRTUAL_ENV",
                        "MAKEFLAGS", "MAKELEVEL", "MFLAGS", "PYSPARK_SUBMIT_ARGS"}}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env.update(extra)
    return env


@pytest.fixture(scope="session")
def package(tmp_path_factory) -> Package:
    """``make wheel package`` into a temp dir, with this test run's virtualenv (for venv-pack) and base Python."""
    out = tmp_path_factory.mktemp("package")
    venv = Path(sys.prefix)
    started = time.monotonic()
    proc = subprocess.run(
        ["make", "-C", str(REPO), "-o", str(venv / ".installed"),  # never reinstall .venv from here
         f"VENV={venv}", f"PYTHON={sys._base_executable}", f"DIST={out / 'dist'}",
         f"PACKAGE_VENV={out / 'package-venv'}",
         # gzip's fastest level: the archive is mostly PySpark's jars, which compress no further (534 MiB at level 1,
         # 525 at venv-pack's default 4), so a slower level only costs CPU time
         "VENV_PACK_FLAGS=--compress-level 1", "wheel", "package"],
        capture_output=True, text=True, env=_clean_env(), timeout=900,
    )
    assert proc.returncode == 0, f"make wheel package failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    _say(f"make wheel package: {time.monotonic() - started:.0f} s")
    wheels = sorted((out / "dist").glob("spark_samza_source-*.whl"))
    assert len(wheels) == 1, wheels
    yield Package(wheels[0], out / "dist" / "spark-samza-source-env.tar.gz", out / "package-venv")
    shutil.rmtree(out, ignore_errors=True)  # about 1.3 GB


@pytest.fixture
def orders_topic(kafka_broker) -> str:
    """4 partitions x 50 records, partition chosen explicitly, so every count below is exact."""
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap, unique_topic("submit"), PARTITIONS)
    produce(bootstrap, topic, [(f"customer-{i % 7}".encode(), f"order-{i}".encode(), None, p)
                               for p in range(PARTITIONS) for i in range(PER_PARTITION)])
    return topic


def _submit(spark_submit: Path, master: str, cwd: Path, env: dict[str, str], bootstrap: str, topic: str,
            extra: list[str] = (), app_args: list[str] = ()) -> subprocess.CompletedProcess:
    java_opts = f"-Dlog4j.configurationFile=file:{LOG4J}"
    command = [
        str(spark_submit), "--master", master,
        "--conf", "spark.ui.enabled=false",
        "--conf", f"spark.driver.extraJavaOptions={java_opts}",
        "--conf", f"spark.executor.extraJavaOptions={java_opts}",
        *extra,
        str(APP), "--bootstrap", bootstrap, "--topic", topic, "--job", "orders-report",
        "--metadata-store", f"file://{cwd}/metadata", "--checkpoint", str(cwd / "checkpoint"),
        "--max-per-trigger", str(MAX_PER_TRIGGER), *app_args,
    ]
    started = time.monotonic()
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=SUBMIT_TIMEOUT_S)
    _say(f"spark-submit --master {master}: exit {proc.returncode} after {time.monotonic() - started:.0f} s")
    return proc


def _lines(proc: subprocess.CompletedProcess, prefix: str) -> dict:
    found = [line[len(prefix):] for line in proc.stdout.splitlines() if line.startswith(prefix)]
    assert len(found) == 1, f"no single {prefix!r} line; exit {proc.returncode}\n{proc.stdout[-3000:]}\n" \
                            f"{proc.stderr[-6000:]}"
    return json.loads(found[0])


def _assert_every_record_read(proc: subprocess.CompletedProcess, topic: str) -> None:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    result = _lines(proc, "RESULT ")
    # default grouper: one task per partition; maxOffsetsPerTrigger=80 over 4x50 -> batches of 80, 80, 40
    assert result == {
        "topic": topic,
        "rows": PARTITIONS * PER_PARTITION,
        "batches": 3,
        "tasks": {f"Partition {p}": {"partitions": [p], "rows": PER_PARTITION} for p in range(PARTITIONS)},
    }


def test_the_wheel_holds_the_package_and_both_shims_and_no_tests(package):
    with zipfile.ZipFile(package.wheel) as wheel:
        names = wheel.namelist()
        metadata = next(wheel.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    tops = {n.split("/", 1)[0] for n in names}
    assert tops == {"spark_samza_source", "pyspark_samza_kafka", "pyspark_samza_kinesis",
                    "-".join(package.wheel.name.split("-")[:2]) + ".dist-info"}, tops
    assert "pyspark_samza_kafka/__init__.py" in names and "pyspark_samza_kinesis/__init__.py" in names
    assert "spark_samza_source/kafka/source.py" in names and "spark_samza_source/kinesis/source.py" in names
    assert not [n for n in names if n.startswith("tests/") or "/tests/" in n or "/test_" in n]
    assert not [n for n in names if n.startswith(("examples/", "notebooks/", "benchmarks/"))]
    assert "Requires-Dist: confluent-kafka" in metadata
    # PySpark only through the spark extra: a platform's own Spark is never replaced by installing the wheel
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist: pyspark")]
    assert all("; extra ==" in line for line in requires), requires
    assert any(line.endswith('extra == "spark"') for line in requires), requires


def test_the_packed_environment_is_the_wheel_installed_not_editable_without_test_extras(package):
    site = package.venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    probe = subprocess.run(
        [str(package.venv / "bin" / "python"), "-c",
         "import importlib.util as u, json; print(json.dumps({m: (u.find_spec(m).origin if u.find_spec(m) else None)"
         " for m in ['pyspark_samza_kafka', 'pyspark_samza_kinesis', 'spark_samza_source', 'pyspark',"
         " 'confluent_kafka', 'pyarrow', 'boto3', 'pytest', 'kafka', 'moto', 'venv_pack']}))"],
        capture_output=True, text=True, env=_clean_env(), timeout=60, cwd=package.venv,
    )
    assert probe.returncode == 0, probe.stderr
    found = json.loads(probe.stdout)
    for module in ("pyspark_samza_kafka", "pyspark_samza_kinesis", "spark_samza_source", "pyspark",
                   "confluent_kafka", "pyarrow", "boto3"):
        assert found[module] and found[module].startswith(str(site)), (module, found[module])
    assert {m: found[m] for m in ("pytest", "kafka", "moto", "venv_pack")} == dict.fromkeys(
        ("pytest", "kafka", "moto", "venv_pack")), "test/dev extras must not be in the runtime environment"
    assert not [p for p in site.glob("*.pth") if str(REPO) in p.read_text()], "an editable install leaked in"
    assert package.archive.stat().st_size > 10 << 20  # unpacked and run from another directory below


def test_spark_submit_ships_the_packed_environment_with_archives(package, kafka_broker, orders_topic, tmp_path):
    # The gateway (where spark-submit runs) has the same environment unpacked as ./environment, so one relative
    # PYSPARK_PYTHON serves the driver, the driver-side source runner and the executors; PYSPARK_DRIVER_PYTHON
    # stays unset (an auto-registered Python data source runs PYSPARK_DRIVER_PYTHON, if set, on the executors).
    gateway = tmp_path / "gateway"
    (gateway / "environment").mkdir(parents=True)
    started = time.monotonic()
    try:
        subprocess.run(["tar", "-xzf", str(package.archive), "-C", str(gateway / "environment")], check=True)
        _say(f"unpacked {package.archive.stat().st_size >> 20} MiB archive in {time.monotonic() - started:.0f} s")
        proc = _submit(
            Path(sys.prefix) / "bin" / "spark-submit", "local-cluster[1,2,1024]", gateway,
            _clean_env(PYSPARK_PYTHON="./environment/bin/python"), kafka_broker.bootstrap_servers, orders_topic,
            ["--archives", f"{package.archive}#environment"],
        )
    finally:  # the unpacked copy and the executor's (under its SPARK_HOME/work): about 1.5 GB
        shutil.rmtree(gateway / "environment", ignore_errors=True)
    _assert_every_record_read(proc, orders_topic)
    where = _lines(proc, "PYTHON ")
    assert where["driver"]["python"] == str(gateway / "environment" / "bin" / "python")
    assert where["driver"]["pyspark_samza_kafka"].startswith(str(gateway / "environment" / "lib"))
    # the executor ran the copy Spark shipped and unpacked in its own work dir (work/app-.../<executor id>/)
    worker = Path(where["worker"]["python"])
    assert worker.parts[-3:] == ("environment", "bin", "python") and "work" in worker.parts, worker
    assert worker.parents[2] != gateway, worker
    assert where["worker"]["pyspark_samza_kafka"].startswith(str(worker.parents[1] / "lib")), where


def test_spark_submit_from_a_fresh_virtualenv_with_the_wheel_pip_installed(package, kafka_broker, orders_topic,
                                                                           tmp_path):
    python = package.venv / "bin" / "python"
    proc = _submit(package.venv / "bin" / "spark-submit", "local[2]", tmp_path,
                   _clean_env(PYSPARK_PYTHON=str(python)), kafka_broker.bootstrap_servers, orders_topic)
    _assert_every_record_read(proc, orders_topic)
    where = _lines(proc, "PYTHON ")
    for side in ("driver", "worker"):
        assert where[side]["python"] == str(python), where
        assert where[side]["pyspark_samza_kafka"].startswith(str(package.venv / "lib")), where


def test_without_the_wheel_in_the_python_environment_samza_kafka_is_not_found(package, kafka_broker, orders_topic,
                                                                              tmp_path):
    # Control for the two runs above: same application, same Spark, a Python without the wheel.
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True)
    spark_home = next((package.venv / "lib").glob("python*/site-packages/pyspark"))
    proc = _submit(package.venv / "bin" / "spark-submit", "local[1]", tmp_path,
                   _clean_env(PYSPARK_PYTHON=str(tmp_path / "bare" / "bin" / "python"), SPARK_HOME=str(spark_home)),
                   kafka_broker.bootstrap_servers, orders_topic)
    assert proc.returncode != 0
    assert "[DATA_SOURCE_NOT_FOUND] Failed to find the data source: samza-kafka" in proc.stdout + proc.stderr
    assert "RESULT " not in proc.stdout


# ---- release wheels (make dist-check) ------------------------------------------------------------------------------

#: kind -> (file name pattern in make dist's directory, the readPath its spark-submit run asks for)
RELEASE_KINDS = {"manylinux_x86_64": ("*-cp311-abi3-manylinux2014_x86_64.*.whl", "native"),
                 "pure": ("*-py3-none-any.whl", "auto")}


@pytest.fixture(scope="module", params=sorted(RELEASE_KINDS))
def release_package(request, tmp_path_factory) -> tuple[str, Package]:
    """A release wheel of ``make dist`` packed by ``make package PACKAGE_WHEEL=...`` (one kind at a time: each
    packed environment is about 1.3 GB with its virtualenv)."""
    where = os.environ.get("SAMZA_RELEASE_DIST")
    if not where:
        pytest.skip("release wheels are checked by `make dist-check` (it runs `make dist` and sets SAMZA_RELEASE_DIST)")
    kind = request.param
    wheels = sorted(Path(where).glob("spark_samza_source-" + RELEASE_KINDS[kind][0]))
    assert len(wheels) == 1, (kind, wheels)
    out = tmp_path_factory.mktemp(f"release-{kind}")
    venv = Path(sys.prefix)
    started = time.monotonic()
    proc = subprocess.run(
        ["make", "-C", str(REPO), "-o", str(venv / ".installed"), f"VENV={venv}", f"PYTHON={sys._base_executable}",
         f"DIST={out / 'dist'}", f"PACKAGE_VENV={out / 'package-venv'}", f"PACKAGE_WHEEL={wheels[0]}", "package"],
        capture_output=True, text=True, env=_clean_env(), timeout=900,
    )
    assert proc.returncode == 0, f"make package failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    _say(f"make package PACKAGE_WHEEL={wheels[0].name}: {time.monotonic() - started:.0f} s")
    yield kind, Package(wheels[0], out / "dist" / "spark-samza-source-env.tar.gz", out / "package-venv")
    shutil.rmtree(out, ignore_errors=True)


def _probe(python: Path, bootstrap: str, topic: str, count: int, read_path: str) -> dict:
    proc = subprocess.run([str(python), str(PROBE), bootstrap, topic, str(count), read_path], capture_output=True,
                          text=True, env=_clean_env(), timeout=300, cwd=python.parent)
    return _lines(proc, "PROBE ")


def test_release_wheel_in_a_clean_virtualenv_reads_through_its_own_path(release_package, kafka_broker,
                                                                       orders_topic):
    kind, package = release_package
    python = package.venv / "bin" / "python"
    site = next((package.venv / "lib").glob("python3*/site-packages"))
    expected = [f"order-{i}" for i in range(PER_PARTITION)]  # partition 0's records, in offset order
    if kind == "manylinux_x86_64":
        probe = _probe(python, kafka_broker.bootstrap_servers, orders_topic, PER_PARTITION, "native")
        assert probe.get("error") is None and probe["values"] == expected, probe
        assert probe["extension"] == str(site / "spark_samza_source/kafka/executor/_native_reader.abi3.so"), probe
        assert probe["log"] == ["samza-kafka executor reads through the native path (extension and librdkafka "
                                "loaded)"], probe
        return
    probe = _probe(python, kafka_broker.bootstrap_servers, orders_topic, PER_PARTITION, "auto")
    assert probe.get("error") is None and probe["values"] == expected and probe["extension"] is None, probe
    not_built = ("the native reader extension is not built into this installation (the pure py3-none-any wheel, "
                 "or a build from source without a C compiler)")
    assert probe["log"] == [  # said once at import, and once by the read that chose its path
        f"samza-kafka: {not_built}; Kafka reads go through the Python path",
        f"samza-kafka executor reads through the python path (native reader unavailable: {not_built})"], probe
    refused = _probe(python, kafka_broker.bootstrap_servers, orders_topic, PER_PARTITION, "native")
    assert "values" not in refused, refused
    assert refused["error"].startswith("KafkaSourceError: [SAMZA_KAFKA_NATIVE_READER_UNAVAILABLE] option 'readPath' "
                                       "is 'native' but the native Kafka reader "
                                       f"cannot run here: {not_built}. To fix:"), refused


def test_release_spark_submit_ships_the_packed_environment_of_each_wheel_kind(release_package, kafka_broker,
                                                                              orders_topic, tmp_path):
    kind, package = release_package
    gateway = tmp_path / "gateway"
    (gateway / "environment").mkdir(parents=True)
    try:
        subprocess.run(["tar", "-xzf", str(package.archive), "-C", str(gateway / "environment")], check=True)
        proc = _submit(
            Path(sys.prefix) / "bin" / "spark-submit", "local-cluster[1,2,1024]", gateway,
            _clean_env(PYSPARK_PYTHON="./environment/bin/python"), kafka_broker.bootstrap_servers, orders_topic,
            ["--archives", f"{package.archive}#environment"], ["--read-path", RELEASE_KINDS[kind][1]],
        )
    finally:
        shutil.rmtree(gateway / "environment", ignore_errors=True)
    _assert_every_record_read(proc, orders_topic)
    worker = Path(_lines(proc, "PYTHON ")["worker"]["python"])
    assert worker.parts[-3:] == ("environment", "bin", "python") and "work" in worker.parts, worker
