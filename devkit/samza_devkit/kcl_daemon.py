"""A real KCL worker for tests: the KCL 3.x MultiLangDaemon (Java), running ``kcl_record_processor`` per shard.

- :func:`ensure_kcl_jars` fetches the pinned ``software.amazon.kinesis:amazon-kinesis-client-multilang`` and its
  runtime dependencies from Maven Central once (``maven_jars``: Maven's ``dependency:copy-dependencies`` on a
  generated POM, into a cache directory outside the repository, under a file lock, so parallel pytest-xdist
  workers fetch once and the others find the jars there).
  :class:`KclNotAvailable` when java or mvn is missing or the fetch fails.

  Why Maven and not the jars of the ``amazon-kclpy`` package: ``pip install amazon-kclpy`` (no wheel on PyPI)
  downloads 79 jars listed in its own pom.xml, without their dependencies' resolution, with ``urllib`` while it
  builds its wheel, into each virtualenv; it leaves them out without an error when its ``bdist_wheel`` hook does not
  import in pip's isolated build environment (amazon-kclpy issue 252). With pip 26.3 and setuptools here the hook
  did import and the 79 jars arrived (13 s), but nothing checks it. And the newest amazon-kclpy (3.2.0) names KCL
  3.5.3, which the Maven repository here does not serve (amazon-kinesis-client-multilang: 2.2.0, 2.5.4, 3.1.3):
  its wheel build fails on HTTP 404 for those jars.
  So the tests take only the ``amazon_kclpy`` Python module from the package (pinned to 3.1.3, the KCL version
  below) and the jars from Maven, resolved with their declared dependencies (131 jars, about 20 s), checked for
  the daemon's own jar, fetched once per machine rather than once per virtualenv.
- :class:`KclWorker` writes the daemon's properties (kinesis-mock behind the devkit's bridge for Kinesis, moto for
  DynamoDB, metrics off, short lease and sync intervals), starts ``java ... MultiLangDaemon`` with its output in
  ``<work dir>/kcl.log`` (a failing test names that file), waits until the scheduler has initialised (polled in
  the log, never a blind sleep) and stops it with SIGTERM (KCL's shutdown hook), killing it if it hangs.

What KCL needs that an emulator lacks is bridged in the devkit and written down in ``docs/kinesis-emulators.md``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .child_process import popen_dying_with_this_process
from .kcl_record_processor import COMMAND_FILE, EVENTS_FILE
from .maven_jars import JarsNotAvailable, fetch_jars
from .waits import deadline_after

__all__ = ["KCL_VERSION", "KclNotAvailable", "KclWorker", "ensure_kcl_jars"]

KCL_VERSION = "3.1.3"
MAIN_CLASS = "software.amazon.kinesis.multilang.MultiLangDaemon"
_READY = "Initialization complete"  # logged by the Scheduler once its lease table, shard sync and leases are set up
_LOGBACK = """<configuration>
  <appender name="OUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level [%thread] %logger{36} - %msg%n</pattern></encoder>
  </appender>
  <logger name="software.amazon.kinesis" level="INFO"/>
  <logger name="software.amazon.awssdk" level="WARN"/>
  <logger name="io.netty" level="WARN"/>
  <root level="WARN"><appender-ref ref="OUT"/></root>
</configuration>
"""


class KclNotAvailable(RuntimeError):
    """java or mvn is missing, or fetching the KCL jars failed (the message says which)."""


def ensure_kcl_jars(version: str = KCL_VERSION, timeout_s: float = 600.0) -> Path:
    """The directory holding the MultiLangDaemon ``version`` and its runtime jars, fetched there if needed
    (``maven_jars``: once per machine, under the lock every Maven fetch of the devkit shares)."""
    if shutil.which("java") is None:
        raise KclNotAvailable("java is not installed (the KCL MultiLangDaemon is a Java program)")
    try:
        jars = fetch_jars(f"kcl-multilang-{version}",
                          [f"software.amazon.kinesis:amazon-kinesis-client-multilang:{version}"], timeout_s=timeout_s)
    except JarsNotAvailable as err:
        raise KclNotAvailable(str(err)) from None
    main_jar = jars / f"amazon-kinesis-client-multilang-{version}.jar"
    if not main_jar.exists():
        raise KclNotAvailable(f"Maven left out {main_jar.name} from {jars}")
    return jars


class KclWorker:
    """One KCL MultiLangDaemon (one worker) on ``stream``, its lease table ``application`` (KCL's application name).

    ``work_dir`` receives ``app.properties``, ``logback.xml``, ``kcl.log`` (the daemon's output) and the record
    processors' ``events.jsonl``; :meth:`command` writes their ``command.json``. ``properties`` override or add
    daemon settings (``MultiLangDaemonConfiguration`` bean names). KCL splits ``executableName`` on spaces, so
    neither ``work_dir`` nor the interpreter's path may hold one."""

    def __init__(self, work_dir: Path, *, stream: str, application: str, kinesis_endpoint: str,
                 dynamodb_endpoint: str, worker_id: str = "kcl-worker-1", region: str = "us-east-1",
                 properties: dict[str, str] | None = None, jars: Path | None = None) -> None:
        self.work_dir = Path(work_dir)
        self.stream = stream
        self.application = application
        self.worker_id = worker_id
        self.jars = jars
        self.settings = {
            "executableName": f"{sys.executable} -m samza_devkit.kcl_record_processor {self.work_dir}",
            "applicationName": application,
            "streamName": stream,
            "regionName": region,
            "kinesisEndpoint": kinesis_endpoint,
            "dynamoDBEndpoint": dynamodb_endpoint,
            "AwsCredentialsProvider": "DefaultCredentialsProvider",
            "workerId": worker_id,
            "metricsLevel": "NONE",
            "disableWorkerMetrics": "true",
            "retrievalMode": "POLLING",
            "initialPositionInStream": "TRIM_HORIZON",
            "callProcessRecordsEvenForEmptyRecordList": "true",
            "idleTimeBetweenReadsInMillis": "250",
            "maxRecords": "1000",
            "failoverTimeMillis": "3000",
            "leaseAssignmentIntervalMillis": "1000",
            "shardSyncIntervalMillis": "2000",
            "parentShardPollIntervalMillis": "500",
            "taskBackoffTimeMillis": "500",
            "shutdownGraceMillis": "1000",
            **(properties or {}),
        }
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file: Any = None

    @property
    def log_path(self) -> Path:
        return self.work_dir / "kcl.log"

    @property
    def events_path(self) -> Path:
        return self.work_dir / EVENTS_FILE

    # ---- life cycle -----------------------------------------------------------------------------------------
    def start(self, timeout_s: float = 120.0) -> KclWorker:
        """Start the daemon; return once it logged that its scheduler initialised (``RuntimeError`` naming the log
        otherwise)."""
        jars = self.jars or ensure_kcl_jars()
        self.work_dir.mkdir(parents=True, exist_ok=True)
        props = self.work_dir / "app.properties"
        props.write_text("".join(f"{k} = {v}\n" for k, v in self.settings.items()))
        (self.work_dir / "logback.xml").write_text(_LOGBACK)
        java = shutil.which("java") or "java"
        cmd = [java, "-Daws.cborEnabled=false", f"-Dlogback.configurationFile={self.work_dir / 'logback.xml'}",
               "-cp", f"{jars}/*:{self.work_dir}", MAIN_CLASS, "--properties-file", str(props)]
        env = {**os.environ,
               "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).resolve().parent.parent),
                                                          os.environ.get("PYTHONPATH", "")]))}
        self._log_file = open(self.log_path, "ab")
        # SIGTERM when the test process dies, so a killed run leaves no daemon (moto and kinesis-mock watch their
        # parent the same way); KCL's shutdown hook then ends the record processors
        self._proc = popen_dying_with_this_process(cmd, signal.SIGTERM, stdout=self._log_file,
                                                   stderr=subprocess.STDOUT, env=env, cwd=self.work_dir,
                                                   start_new_session=True)
        self.wait_for(lambda: _READY in self.log_text(), timeout_s, "the KCL scheduler to initialise")
        return self

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM (KCL's shutdown hook ends the record processors), then SIGKILL if it is still running."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def __enter__(self) -> KclWorker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- what it did ----------------------------------------------------------------------------------------
    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        try:
            lines = self.events_path.read_text().splitlines()
        except FileNotFoundError:
            return []
        out = [json.loads(line) for line in lines if line.strip()]
        return [e for e in out if kind is None or e["event"] == kind]

    def records(self) -> list[dict[str, Any]]:
        """Every user record the processors wrote, in the order each shard delivered them."""
        return self.events("record")

    def command(self, checkpoints: dict[str, Any]) -> None:
        """Tell the processors where to checkpoint (see ``kcl_record_processor``); written atomically."""
        tmp = self.work_dir / (COMMAND_FILE + ".tmp")
        tmp.write_text(json.dumps(checkpoints))
        tmp.replace(self.work_dir / COMMAND_FILE)

    def wait_for(self, condition: Callable[[], Any], timeout_s: float = 90.0, what: str = "a condition") -> Any:
        """Poll ``condition`` until truthy (returned); RuntimeError naming the daemon's log if the daemon exits or
        the time runs out."""
        started, deadline = time.monotonic(), deadline_after(timeout_s)
        while True:
            value = condition()
            if value:
                return value
            if self._proc is not None and self._proc.poll() is not None:
                raise RuntimeError(f"the KCL daemon exited with code {self._proc.returncode} while waiting for "
                                   f"{what}; its log: {self.log_path}\n{self.log_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out after {time.monotonic() - started:.0f}s ({timeout_s:g}s scaled to the "
                                   f"machine's load) waiting for {what}; last seen: {value!r}; the KCL daemon's log: "
                                   f"{self.log_path}\n{self.log_text()[-3000:]}")
            time.sleep(0.2)
