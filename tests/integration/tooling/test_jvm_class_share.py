"""The test runs' class-data sharing (``samza_devkit.jvm_class_share``): a class path archived once is mapped by the
next JVM of that class path, a JVM of any other class path starts as it would without the script, and the
archives are tied to the jar files they were made from.

Each case builds its own script and archive directory (not the run's), around Apache Kafka's jars and its
``StorageTool random-uuid`` (a JVM that prints one line and exits)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from samza_devkit import jvm_class_share as share
from samza_devkit.apache_kafka import kafka_jars

MAIN = ["kafka.tools.StorageTool", "random-uuid"]
LOADED_FROM_ARCHIVE = "source: shared objects file (top)"


@pytest.fixture
def shim(tmp_path) -> tuple[Path, Path]:
    real_home = share.real_java_home()
    assert real_home is not None, "no JDK found (JAVA_HOME or java on PATH)"
    archives = tmp_path / "archives"
    archives.mkdir()
    return archives, share.make_shim_home(archives, real_home) / "bin" / "java"


def _run(java: Path, class_path: str, *extra: str, dump: bool = False) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != share.DUMP_ENV}
    if dump:
        env[share.DUMP_ENV] = "1"
    proc = subprocess.run([str(java), *extra, "-cp", class_path, *MAIN], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc


def _storage_tool_line(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in proc.stdout.splitlines() if "kafka.tools.StorageTool " in line and "class,load" in line]
    assert lines, proc.stdout[-2000:]
    return lines[0]


def test_a_class_path_archived_once_is_mapped_by_its_next_jvm(shim):
    archives, java = shim
    class_path = f"{kafka_jars()}/*"
    dumped = _run(java, class_path, dump=True)
    # the tool still did its work (a base64 UUID), beside the dump's warnings about classes it cannot archive
    assert [line for line in dumped.stdout.splitlines() if len(line) == 22 and "[" not in line], dumped.stdout[-500:]
    assert len(list(archives.glob("*.jsa.part*"))) == 1
    assert share.keep_largest_archive_per_class_path(archives) == 1
    assert len(list(archives.glob("*.jsa"))) == 1 and not list(archives.glob("*.jsa.part*"))

    mapped = _run(java, class_path, "-Xlog:class+load=info")
    assert LOADED_FROM_ARCHIVE in _storage_tool_line(mapped)


def test_a_jvm_of_a_class_path_without_an_archive_starts_unchanged(shim, tmp_path):
    archives, java = shim
    _run(java, f"{kafka_jars()}/*", dump=True)
    share.keep_largest_archive_per_class_path(archives)
    other = _run(java, f"{kafka_jars()}/*:{tmp_path}", "-Xlog:class+load=info")  # another class path
    line = _storage_tool_line(other)
    assert LOADED_FROM_ARCHIVE not in line and "source: file:" in line, line


def test_the_archives_directory_changes_with_any_jar(tmp_path):
    jars = tmp_path / "jars"
    jars.mkdir()
    shutil.copy(next(Path(kafka_jars()).glob("*.jar")), jars / "a.jar")
    java = shutil.which("java") or "java"
    before = share.environment_key(java, [jars])
    assert share.environment_key(java, [jars]) == before
    os.utime(jars / "a.jar", ns=(1, 1))  # same bytes, another time: Java would refuse the archive
    assert share.environment_key(java, [jars]) != before


def test_the_real_jdk_is_found_behind_an_installed_script_and_a_nested_run_installs_nothing(shim, monkeypatch,
                                                                                             tmp_path):
    archives, java = shim
    real = share.real_java_home()
    monkeypatch.setenv("JAVA_HOME", str(java.parent.parent))  # as under a run that installed the script
    assert share.real_java_home() == real and not (real / "lib").is_symlink()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    nested = share._cache_root() / "environment" / "jdk"
    nested.mkdir(parents=True)
    monkeypatch.setenv("JAVA_HOME", str(nested))
    path = os.environ["PATH"]
    assert share.install() is None
    assert os.environ["JAVA_HOME"] == str(nested) and os.environ["PATH"] == path
