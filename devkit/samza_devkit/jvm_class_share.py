"""Class-data sharing for the suite's JVMs: the classes a Spark driver or a Kafka broker loads at start, archived
once per run environment and mapped by every later JVM of the same class path.

A local Spark session's JVM spends about 8 of its 18 CPU seconds of start loading and verifying the same ~15,000
classes, an Apache Kafka broker about 3 of its 8; the suite starts dozens of each on two cores. Java 17's dynamic
archives (``-XX:ArchiveClassesAtExit`` once, ``-XX:SharedArchiveFile`` after) skip that work: a session starts in
about 10 CPU seconds (8 s of wall time instead of 15), a broker in 5.

How it reaches every JVM without touching how tests launch them: :func:`install` puts a ``java`` of its own first
on ``PATH`` (Spark's ``spark-class``, the Kafka launcher and the KCL daemon all run the ``java`` they find there when
``JAVA_HOME`` is unset). That script hashes the class path it is given and, when an archive for that class path
exists, runs the real ``java`` with it; otherwise it runs the real ``java`` unchanged. It never changes a JVM's
process (it ``exec``s), so tests that find, signal or kill JVMs see the same processes as before.

:func:`train` makes the archives: one short Spark session that reads a small topic with samza-kafka, beside one
Apache Kafka broker, each JVM run with ``-XX:ArchiveClassesAtExit`` (through the same script, asked to dump). A
Java 17 archive is tied to the exact jar files it was made from (their size and time): the archives live in a
directory named after those (:func:`environment_key`), outside the repository, so a later run on the same
virtualenv and jars reuses them, and a fresh clone's new virtualenv makes its own.

Only under the devkit's pytest plugin: benchmarks and the demo run Java as users do. ``SAMZA_TEST_CLASS_SHARING=0``
turns it off; where ``JAVA_HOME`` is set (so Spark ignores ``PATH``) or something fails, JVMs simply start without
an archive.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["DUMP_ENV", "enabled", "environment_key", "install", "keep_largest_archive_per_class_path", "make_shim_home",
           "real_java_home", "train"]

#: the script put first on PATH as ``java``: @REAL@ and @DIR@ are filled in by :func:`install`
_SHIM = r"""#!/bin/bash
# samza_devkit.jvm_class_share: run the real java with the class-data archive made for this class path, if any.
real='@REAL@'
dir='@DIR@'
cp='' prev=''
for arg in "$@"; do
  case "$prev" in -cp|-classpath|--class-path) cp="$arg"; break;; esac
  case "$arg" in -*) ;; *) break;; esac
  prev="$arg"
done
if [ -n "$cp" ]; then
  key=$(printf '%s' "$cp" | md5sum | cut -c1-20)
  if [ -n "$SAMZA_CLASS_SHARING_DUMP" ]; then
    exec "$real" "-XX:ArchiveClassesAtExit=$dir/$key.jsa.part$$" "$@"
  elif [ -f "$dir/$key.jsa" ]; then
    exec "$real" "-XX:SharedArchiveFile=$dir/$key.jsa" -Xlog:cds=off -Xlog:cds+dynamic=off "$@"
  fi
fi
exec "$real" "$@"
"""

DUMP_ENV = "SAMZA_CLASS_SHARING_DUMP"
_SWITCH_ENV = "SAMZA_TEST_CLASS_SHARING"
_TRAINED = "trained"
_KEEP_ENVIRONMENTS = 3  # archive directories kept (the newest): about 220 MB each
_UNUSED_FOR_S = 2 * 86400


def enabled() -> bool:
    return os.environ.get(_SWITCH_ENV, "1") != "0" and real_java_home() is not None


def real_java_home() -> Path | None:
    """The JDK the JVMs would run without this module: ``JAVA_HOME``'s, else the one of ``java`` on ``PATH``."""
    if os.environ.get("JAVA_HOME"):
        home = Path(os.environ["JAVA_HOME"])
    else:
        found = shutil.which("java")
        if not found:
            return None
        home = Path(os.path.realpath(found)).parent.parent
    if (home / "lib").is_symlink():  # one of this module's own homes: the JDK it links to
        home = Path(os.path.realpath(home / "lib")).parent
    return home if (home / "bin" / "java").is_file() else None


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "spark-samza-source" / "jvm-classes"


def _jar_dirs() -> list[Path]:
    import pyspark

    from .apache_kafka import kafka_jars

    return [Path(pyspark.__file__).parent / "jars", Path(kafka_jars())]


def environment_key(java: str, jar_dirs: list[Path]) -> str:
    """What an archive depends on: the real java binary and every jar's path, size and time."""
    digest = hashlib.sha256(os.path.realpath(java).encode())
    for folder in jar_dirs:
        for jar in sorted(folder.glob("*.jar")):
            stat = jar.stat()
            digest.update(f"{jar}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:20]


def install() -> Path | None:
    """Make ``JAVA_HOME`` (and ``PATH``'s first ``java``) this module's script for this process and its children,
    and return the directory the archives live in (None where sharing is off or cannot work here).

    ``JAVA_HOME`` because Spark's launcher starts the driver with ``$JAVA_HOME/bin/java`` (or, without it, the
    launcher JVM's own ``java.home``, which would bypass a script on ``PATH``): the script's JDK is the real one
    with every entry linked except ``bin/java``."""
    current = os.environ.get("JAVA_HOME")
    if current and _cache_root() in Path(current).parents:
        return None  # a process started under a run that installed it (a pytest run inside a test): in place
    real_home = real_java_home() if enabled() else None
    if real_home is None:
        return None
    archives = _cache_root() / environment_key(str(real_home / "bin" / "java"), _jar_dirs())
    archives.mkdir(parents=True, exist_ok=True)
    os.utime(archives)  # in use: pruning goes by this time
    home = make_shim_home(archives, real_home)
    os.environ["JAVA_HOME"] = str(home)
    os.environ["PATH"] = f"{home / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    return archives


def make_shim_home(archives: Path, real_home: Path) -> Path:
    """``archives/jdk``: ``real_home`` linked entry by entry, ``bin/java`` the script choosing from ``archives``;
    built aside and renamed into place, so a concurrent run sees a whole one or none."""
    home = archives / "jdk"
    if (home / "bin" / "java").exists():
        return home
    script = _SHIM.replace("@REAL@", str(real_home / "bin" / "java")).replace("@DIR@", str(archives))
    building = home.with_name(f"{home.name}.{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    (building / "bin").mkdir(parents=True)
    for entry in real_home.iterdir():
        if entry.name != "bin":
            (building / entry.name).symlink_to(entry)
    for tool in (real_home / "bin").iterdir():
        if tool.name != "java":
            (building / "bin" / tool.name).symlink_to(tool)
    (building / "bin" / "java").write_text(script)
    (building / "bin" / "java").chmod(0o755)
    try:
        building.rename(home)
    except OSError:  # another run made it meanwhile
        shutil.rmtree(building, ignore_errors=True)
    return home


def train(archives: Path) -> subprocess.Popen | None:
    """Start making the archives in ``archives`` unless a run before made them (or another run is making them
    now): a child process that runs one small samza-kafka query on Apache Kafka with every JVM dumping its classes,
    then puts the archives in place. It runs beside the tests, not before them: a JVM started before the archive
    of its class path is in place just starts without one, and a run never waits for the training."""
    if (archives / _TRAINED).exists():
        return None
    env = {**os.environ, DUMP_ENV: "1"}
    env.pop("PYTEST_CURRENT_TEST", None)
    log = open(archives / "training.log", "w")  # noqa: SIM115 - the child's, closed with this process
    return subprocess.Popen([sys.executable, "-m", __name__, str(archives)], env=env, stdin=subprocess.DEVNULL,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _train_once(archives: Path) -> None:
    """The child's work, under a file lock so that concurrent test runs train once."""
    with open(archives / "lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # another run is training
        if (archives / _TRAINED).exists():
            return
        started = time.monotonic()
        for stale in archives.glob("*.jsa.part*"):
            stale.unlink(missing_ok=True)
        outcome = "done"
        try:
            _training_run()
        except Exception as err:  # noqa: BLE001 - what was archived before it is kept; a later run does not retry
            outcome = f"failed ({type(err).__name__}: {err}); see training.log"
            raise
        finally:
            kept = keep_largest_archive_per_class_path(archives)
            (archives / _TRAINED).write_text(f"{outcome}: {kept} archives in {time.monotonic() - started:.0f} s\n")
            _prune_other_environments(archives)


def keep_largest_archive_per_class_path(archives: Path) -> int:
    """A class path's JVMs each dumped an archive (the broker and the storage tool share Kafka's): keep the
    largest, which holds the most classes; a JVM killed while dumping left a part that Java would refuse anyway."""
    by_key: dict[str, list[Path]] = {}
    for part in archives.glob("*.jsa.part*"):
        by_key.setdefault(part.name.split(".jsa.part", 1)[0], []).append(part)
    for key, parts in by_key.items():
        parts.sort(key=lambda p: p.stat().st_size)
        parts[-1].replace(archives / f"{key}.jsa")
        for extra in parts[:-1]:
            extra.unlink(missing_ok=True)
    return len(by_key)


def _prune_other_environments(current: Path) -> None:
    """Archives of other virtualenvs (an old clone's) go once unused for days, the newest few kept whatever
    their age: a run still using one has it as its ``JAVA_HOME``."""
    others = sorted((p for p in current.parent.iterdir() if p.is_dir() and p != current),
                    key=lambda p: p.stat().st_mtime, reverse=True)
    for stale in others[_KEEP_ENVIRONMENTS - 1:]:
        if time.time() - stale.stat().st_mtime > _UNUSED_FOR_S:
            shutil.rmtree(stale, ignore_errors=True)


def _training_run() -> None:
    """The classes a test's Spark driver and broker load: a session reading a topic with samza-kafka (streaming,
    into a noop sink, and as a batch, collected), the broker serving it."""
    import tempfile

    from .apache_kafka import ApacheKafkaBroker
    from .kafka_helpers import create_topic, produce
    from .spark_fixtures import make_local_spark

    root = Path(tempfile.mkdtemp(prefix="samza-class-sharing-"))
    try:
        with ApacheKafkaBroker() as broker:
            topic = create_topic(broker.bootstrap_servers, "training", 2)
            produce(broker.bootstrap_servers, topic, [(b"k", b"v", None, p) for p in range(2) for _ in range(5)])
            spark = make_local_spark(app_name="class-sharing-training", kafka_connector=True)
            options = {"kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": topic,
                       "job.name": "training", "metadata.store": f"file://{root}/metadata",
                       "startingOffsets": "earliest"}
            query = (spark.readStream.format("samza-kafka").options(**options).load()
                     .writeStream.format("noop").option("checkpointLocation", str(root / "checkpoint"))
                     .trigger(availableNow=True).start())
            query.awaitTermination(120)
            spark.read.format("samza-kafka").options(**{**options, "job.name": "training-batch"}).load().collect()
            jvm = spark.sparkContext._gateway.proc  # the driver JVM (spark-class execs it): it archives as it exits
            spark.stop()
            jvm.stdin.close()  # Spark's gateway exits when its stdin closes
            jvm.wait(timeout=240)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    _train_once(Path(sys.argv[1]))
