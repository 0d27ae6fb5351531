"""Fetch pinned Java artifacts with their runtime dependencies from Maven Central into a cache, once.

The test servers that are Java programs (Apache Kafka, a KCL MultiLangDaemon) run from jars, never from a
download of a release tarball: Maven resolves the artifacts and their runtime dependencies and copies them into
``<cache>/<name>/jars``. The cache is outside the repository (``SAMZA_MAVEN_JARS_DIR`` or
``~/.cache/spark-samza-source/maven-jars``), keyed by a name that carries the versions, filled under a file lock
(two pytest-xdist workers starting at once fetch once; the other finds the jars there), and marked complete only
when Maven succeeded, so a fetch cut short is fetched again.

Why Maven and not the Ivy jar PySpark ships: one ``copy-dependencies`` resolves every artifact of a set together
(one version per library across the set, as a build would), while Ivy's command line resolves one module per
call. Maven comes with the JDK on these machines; where it is missing the error says what to install.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from xml.sax.saxutils import escape

__all__ = ["JarsNotAvailable", "fetch_jars", "jars_cache_root"]

# maven-dependency-plugin pinned: an old Maven's super-POM default lacks copy-dependencies' current options
_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
_COMPLETE = ".complete"


class JarsNotAvailable(RuntimeError):
    """Maven is missing, or resolving the artifacts failed (the message says which and Maven's own words)."""


def jars_cache_root() -> Path:
    configured = os.environ.get("SAMZA_MAVEN_JARS_DIR", "").strip()
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "spark-samza-source" / "maven-jars"


def fetch_jars(name: str, artifacts: Sequence[str], *, timeout_s: float = 600.0) -> Path:
    """The directory holding ``artifacts`` (``group:artifact:version`` each) and their runtime dependencies,
    fetched into ``<cache>/<name>/jars`` if not there yet. ``name`` must change whenever ``artifacts`` do."""
    root = jars_cache_root()
    target = root / name
    jars = target / "jars"
    target.mkdir(parents=True, exist_ok=True)
    # one lock for every set: Maven's local repository is shared by all of them and not safe for two writers
    with open(root / ".fetch.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / _COMPLETE).exists():
            _copy_dependencies(target, jars, artifacts, timeout_s)
            (target / _COMPLETE).write_text("\n".join(artifacts) + "\n")
    return jars


def _copy_dependencies(target: Path, jars: Path, artifacts: Sequence[str], timeout_s: float) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarsNotAvailable("Maven ('mvn') is not on PATH; it fetches the test servers' jars from Maven Central. "
                               "Install it (Debian: apt-get install maven) and run again.")
    shutil.rmtree(jars, ignore_errors=True)
    pom = target / "pom.xml"
    pom.write_text(_pom(artifacts))
    cmd = [mvn, "-B", "-q", "-f", str(pom), f"{_DEPENDENCY_PLUGIN}:copy-dependencies",
           "-DincludeScope=runtime", f"-DoutputDirectory={jars}"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise JarsNotAvailable(f"Maven took longer than {timeout_s:.0f} s to fetch {', '.join(artifacts)}") from None
    if done.returncode != 0 or not any(jars.glob("*.jar")):
        raise JarsNotAvailable(f"Maven could not fetch {', '.join(artifacts)} (exit {done.returncode}): "
                               f"{(done.stdout + done.stderr)[-3000:]}")


def _pom(artifacts: Sequence[str]) -> str:
    deps = []
    for coordinate in artifacts:
        group, artifact, version = coordinate.split(":")
        deps.append(f"<dependency><groupId>{escape(group)}</groupId><artifactId>{escape(artifact)}</artifactId>"
                    f"<version>{escape(version)}</version></dependency>")
    return ("<project><modelVersion>4.0.0</modelVersion><groupId>local.samza-devkit</groupId>"
            "<artifactId>jars</artifactId><version>1</version><packaging>pom</packaging>"
            f"<dependencies>{''.join(deps)}</dependencies></project>\n")
