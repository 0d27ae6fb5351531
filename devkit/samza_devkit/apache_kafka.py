"""Apache Kafka itself for tests: one KRaft node (broker and controller in one JVM) on loopback.

The jars come from Maven Central (``maven_jars``: ``org.apache.kafka:kafka_2.13`` with its runtime dependencies,
``kafka-tools`` for the command-line tools, and the log4j binding Kafka's POM leaves out, without which the
broker logs nothing). ``ApacheKafkaBroker`` has the development broker's handle (``bootstrap_servers``, ``start``,
``stop``, ``kill``, ``restart`` keeping its data), so the same tests and fault drivers run on either.

- ``start()`` formats a KRaft storage directory (``kafka.tools.StorageTool``; SCRAM users are added there, as
  ``kafka-storage format --add-scram`` does) on first start, then runs ``kafka.Kafka`` with a bounded heap on free
  loopback ports and returns once the broker answers: a topic can be created and deleted through the admin API
  (registered and unfenced), asked, never slept.
- The settings make Kafka's background work act within seconds instead of minutes (retention checks every second,
  the log cleaner backing off half a second, segments deleted a second after they are dropped, the transaction
  timeout checked every second) and fit one node (replication factor 1 for the internal topics).
- The broker's own log (log4j) goes to ``log_path``; ``log_tail()`` reads it, and the pytest plugin names it when
  a test that used the broker fails.
- ``run_tool(class, *args)`` runs one of Kafka's command-line tools (``kafka-consumer-groups`` is
  ``org.apache.kafka.tools.consumer.group.ConsumerGroupCommand``) from the same jars.

A node of a replicated cluster (``samza_devkit.kafka_cluster``) is this class with its ports, quorum and
network namespace chosen by the cluster.

The JVM dies with the process that started it (``PR_SET_PDEATHSIG``), so a test run killed hard leaves no broker.

Command line (runs until SIGTERM or SIGINT; a data directory given is kept and reused)::

    python -m samza_devkit.apache_kafka --port 9092 [--data-dir DIR]
    listening on 127.0.0.1:9092
"""

from __future__ import annotations

import base64
import concurrent.futures
import contextlib
import logging
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

from .child_process import popen_dying_with_this_process
from .maven_jars import fetch_jars
from .waits import deadline_after

__all__ = ["KAFKA_VERSION", "ApacheKafkaBroker", "kafka_jars"]

#: the one place the Apache Kafka version of the test broker is named
KAFKA_VERSION = "4.2.0"
#: the log4j2 version Kafka 4.2's own distribution ships (its POM leaves the SLF4J binding out)
_LOG4J_VERSION = "2.25.3"
_ARTIFACTS = (f"org.apache.kafka:kafka_2.13:{KAFKA_VERSION}", f"org.apache.kafka:kafka-tools:{KAFKA_VERSION}",
              f"org.apache.logging.log4j:log4j-slf4j-impl:{_LOG4J_VERSION}",
              f"org.apache.logging.log4j:log4j-core:{_LOG4J_VERSION}")

_NODE_ID = 1
# What the tests need of one node, and Kafka's background work within seconds (defaults in brackets)
_SETTINGS = {
    "process.roles": "broker,controller",
    "node.id": str(_NODE_ID),
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "num.partitions": "1",
    "auto.create.topics.enable": "false",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "num.recovery.threads.per.data.dir": "1",
    # [7 days] tests write records stamped years ago (fixed timestamps), which time retention would delete within a
    # second here; retention acts only on topics that set retention.ms themselves
    "log.retention.ms": "-1",
    "log.initial.task.delay.ms": "0",  # [30000] retention and cleaner tasks start at once
    "log.retention.check.interval.ms": "1000",  # [300000]
    "log.cleaner.backoff.ms": "500",  # [15000]
    "log.cleaner.dedupe.buffer.size": "2097152",  # [128 MiB]
    "log.segment.delete.delay.ms": "1000",  # [60000]
    "file.delete.delay.ms": "1000",  # [60000] a deleted topic's files
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",  # [10000]
}
# One node only (the replicated cluster keeps Kafka's default): the active controller appends a no-op record to the
# metadata log every 500 ms to show it is alive [metadata.max.idle.interval.ms], and the broker side replays each; an
# idle test broker spent about a third of its CPU on that (2.0 -> 1.3 CPU-s a minute), and a run keeps three such
# brokers for half an hour. Records a test writes still commit at once on a lone node.
_SINGLE_NODE_SETTINGS = {"metadata.max.idle.interval.ms": "5000"}
_SASL_LISTENER = "SASL_PLAINTEXT"
_SCRAM = "SCRAM-SHA-512"


def kafka_jars() -> Path:
    """The directory of Apache Kafka's jars, fetched from Maven Central on first use (see ``maven_jars``)."""
    return fetch_jars(f"kafka-{KAFKA_VERSION}-log4j-{_LOG4J_VERSION}", _ARTIFACTS)


class ApacheKafkaBroker:
    """One Apache Kafka node. ``start()``/``stop()``/``kill()``/``restart()``, or use it as a context manager.

    ``sasl_plain_users`` / ``sasl_scram_users`` (name -> password) add a SASL_PLAINTEXT listener with PLAIN and
    SCRAM-SHA-512 for those users; ``bootstrap_servers`` is then that listener (as on the development broker, whose
    SASL listener is its only one), and ``plaintext_bootstrap_servers`` the open one. ``config`` adds or overrides
    broker settings. ``host``: the address its client listeners bind and advertise (loopback by default; a cluster
    test gives it an address of its own that other network namespaces reach: ``samza_devkit.spark_cluster``).
    """

    is_dev_broker = False
    version = KAFKA_VERSION

    def __init__(self, data_dir: str | os.PathLike | None = None, *, port: int = 0, heap_mb: int = 512,
                 sasl_plain_users: dict[str, str] | None = None, sasl_scram_users: dict[str, str] | None = None,
                 config: dict[str, str] | None = None, start_timeout: float = 120.0, host: str = "127.0.0.1"):
        self._owns_dir = data_dir is None
        self._home = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="samza-kafka-"))
        self.heap_mb = heap_mb
        self.sasl_plain_users = dict(sasl_plain_users or {})
        self.sasl_scram_users = dict(sasl_scram_users or {})
        self.extra_config = dict(config or {})
        self.start_timeout = start_timeout
        self.port = port  # the PLAINTEXT listener's port; 0: a free one
        self.host = host
        self.log_path = self._home / "broker.log"
        self._ports: dict[str, int] = {}
        self._proc: subprocess.Popen | None = None
        self._lock = threading.RLock()

    # ------------------------------------------------------------------------------ addresses
    @property
    def data_dir(self) -> Path:
        return self._home / "data"

    @property
    def plaintext_bootstrap_servers(self) -> str:
        if not self._ports:
            raise RuntimeError("broker not started")
        return f"{self.host}:{self._ports['PLAINTEXT']}"

    @property
    def bootstrap_servers(self) -> str:
        if self._has_sasl:
            if not self._ports:
                raise RuntimeError("broker not started")
            return f"{self.host}:{self._ports[_SASL_LISTENER]}"
        return self.plaintext_bootstrap_servers

    @property
    def _has_sasl(self) -> bool:
        return bool(self.sasl_plain_users or self.sasl_scram_users)

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # ------------------------------------------------------------------------------ lifecycle
    def start(self) -> ApacheKafkaBroker:
        with self._lock:
            if self.running:
                return self
            jars = kafka_jars()
            first_start = not self._ports
            for attempt in range(3):
                if first_start:
                    self._ports = self._choose_ports()
                    self._write_config()
                    self._format(jars)
                self._launch(jars)
                try:
                    self._wait_until_ready()
                    return self
                except _PortTaken:
                    # a port chosen free was bound by someone else before the broker bound it: choose again
                    self._terminate(signal.SIGKILL)
                    if not first_start or attempt == 2:
                        raise RuntimeError(f"Apache Kafka could not bind its ports; see {self.log_path}:\n"
                                           + self.log_tail()) from None
                    shutil.rmtree(self.data_dir, ignore_errors=True)
            return self

    def stop(self) -> None:
        """Stop the broker (SIGTERM: a clean shutdown) and, if this handle made its directory, remove it."""
        with self._lock:
            self._terminate(signal.SIGTERM)
            if self._owns_dir:
                shutil.rmtree(self._home, ignore_errors=True)

    def kill(self) -> None:
        """Crash the broker (SIGKILL). Data is kept: ``start()`` brings it back on the same ports."""
        with self._lock:
            self._terminate(signal.SIGKILL)

    def restart(self) -> None:
        """Stop cleanly and start again on the same ports with the same data."""
        with self._lock:
            self._terminate(signal.SIGTERM)
            self.start()

    def __enter__(self) -> ApacheKafkaBroker:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __del__(self):  # best effort: never leave a broker behind
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(Exception):
                proc.kill()

    def log_tail(self, n: int = 40) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])

    # ------------------------------------------------------------------------------ tools
    def run_tool(self, main_class: str, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
        """Run one of Kafka's command-line tools from the broker's jars (``check=True``: raises on a non-zero exit)."""
        cmd = [_java(), "-Xmx256m", "-cp", f"{kafka_jars()}/*", f"-Dlog4j2.configurationFile={self._tool_log4j()}",
               main_class, *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)

    def create_topic(self, name: str, partitions: int = 1, config: dict[str, str] | None = None) -> None:
        from .kafka_helpers import create_topic

        create_topic(self.plaintext_bootstrap_servers, name, partitions, config)

    def delete_topic(self, name: str, timeout: float = 30.0) -> None:
        from confluent_kafka.admin import AdminClient

        AdminClient({"bootstrap.servers": self.plaintext_bootstrap_servers}).delete_topics(
            [name], operation_timeout=timeout)[name].result(timeout)

    # ------------------------------------------------------------------------------ internals
    # (``_choose_ports``, ``_settings``, ``_quorum_voters``, ``_launch_prefix`` and ``_new_cluster_id`` are what a
    # node of ``samza_devkit.kafka_cluster`` changes: its ports, the quorum of three, its network namespace)
    def _choose_ports(self) -> dict[str, int]:
        listeners = ["PLAINTEXT", "CONTROLLER"] + ([_SASL_LISTENER] if self._has_sasl else [])
        listeners += list(self._more_listeners())
        ports = _free_ports(listeners, self.host)
        if self.port:
            ports["PLAINTEXT"] = self.port
        return ports

    def _settings(self) -> dict[str, str]:
        return {**_SETTINGS, **_SINGLE_NODE_SETTINGS}

    def _controller_host(self) -> str:
        return "127.0.0.1"

    def _quorum_voters(self) -> str:
        return f"{_NODE_ID}@127.0.0.1:{self._ports['CONTROLLER']}"

    def _launch_prefix(self) -> list[str]:
        return []

    def _new_cluster_id(self) -> str:
        return _cluster_id()

    def _write_config(self) -> None:
        ports = self._ports
        listeners = {"PLAINTEXT": ports["PLAINTEXT"], "CONTROLLER": ports["CONTROLLER"]}
        hosts = {"PLAINTEXT": self.host, "CONTROLLER": self._controller_host(), _SASL_LISTENER: self.host}
        protocols = {"PLAINTEXT": "PLAINTEXT", "CONTROLLER": "PLAINTEXT"}
        if self._has_sasl:
            listeners[_SASL_LISTENER] = ports[_SASL_LISTENER]
            protocols[_SASL_LISTENER] = "SASL_PLAINTEXT"
        for name, protocol in self._more_listeners().items():
            listeners[name], protocols[name], hosts[name] = ports[name], protocol, self.host
        settings = self._settings()
        settings.update({
            "controller.quorum.voters": self._quorum_voters(),
            "listeners": ",".join(f"{name}://{hosts[name]}:{port}" for name, port in listeners.items()),
            "advertised.listeners": ",".join(f"{name}://{hosts[name]}:{port}" for name, port in listeners.items()
                                             if name != "CONTROLLER"),
            "listener.security.protocol.map": ",".join(f"{k}:{v}" for k, v in protocols.items()),
            "log.dirs": str(self.data_dir),
        })
        if self._has_sasl:
            settings.update(self._sasl_settings())
        settings.update(self._more_settings())
        settings.update(self.extra_config)
        self._home.mkdir(parents=True, exist_ok=True)
        (self._home / "server.properties").write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        (self._home / "log4j2.properties").write_text(_log4j_to_file(self.log_path))

    # a subclass's further client listeners (name -> security protocol) and their settings: ``kafka_tls.py``
    def _more_listeners(self) -> dict[str, str]:
        return {}

    def _more_settings(self) -> dict[str, str]:
        return {}

    def _sasl_settings(self) -> dict[str, str]:
        prefix = f"listener.name.{_SASL_LISTENER.lower()}"
        plain_users = " ".join(f'user_{name}="{_jaas_quote(pw)}"' for name, pw in self.sasl_plain_users.items())
        return {
            "sasl.enabled.mechanisms": f"PLAIN,{_SCRAM}",
            f"{prefix}.plain.sasl.jaas.config":
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};",
            f"{prefix}.{_SCRAM.lower()}.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        }

    def _format(self, jars: Path) -> None:
        cluster_id = self._new_cluster_id()
        cmd = [_java(), "-Xmx256m", "-cp", f"{jars}/*", f"-Dlog4j2.configurationFile={self._tool_log4j()}",
               "kafka.tools.StorageTool", "format", "--ignore-formatted", "-t", cluster_id,
               "-c", str(self._home / "server.properties")]
        for name, password in self.sasl_scram_users.items():
            cmd += ["--add-scram", f"{_SCRAM}=[name={name},password={password}]"]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"formatting Apache Kafka's storage failed: {(done.stdout + done.stderr)[-2000:]}")

    def _launch(self, jars: Path) -> None:
        cmd = [*self._launch_prefix(), _java(), f"-Xms{min(256, self.heap_mb)}m", f"-Xmx{self.heap_mb}m",
               "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true",
               f"-Dlog4j2.configurationFile={self._home / 'log4j2.properties'}",
               "-cp", f"{jars}/*", "kafka.Kafka", str(self._home / "server.properties")]
        with open(self._home / "stdout.log", "ab") as out:
            # started from one long-lived thread: PR_SET_PDEATHSIG fires when the *thread* that forked the child
            # ends, and a fault driver may restart the broker from a thread of its own that ends soon after
            self._proc = _LAUNCHER.submit(popen_dying_with_this_process, cmd, signal.SIGKILL,
                                          stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                          close_fds=True).result()

    def _wait_until_ready(self) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.plaintext_bootstrap_servers, "socket.timeout.ms": 2000,
                             "logger": _QUIET})  # 'connection refused' until the broker listens: expected
        deadline = deadline_after(self.start_timeout)
        probe = f"__samza-devkit-ready-{uuid.uuid4().hex[:8]}"
        last: Exception | None = None
        while time.monotonic() < deadline:
            if not self.running:
                if "Address already in use" in self.log_tail(200) + self._stdout_tail():
                    raise _PortTaken()
                raise RuntimeError(f"Apache Kafka exited with code {self._proc.returncode} while starting; see "
                                   f"{self.log_path}:\n{self.log_tail()}\n{self._stdout_tail()}")
            try:
                admin.create_topics([NewTopic(probe, 1, 1)], operation_timeout=5)[probe].result(10)
                admin.delete_topics([probe], operation_timeout=5)[probe].result(10)
                return
            except Exception as exc:  # noqa: BLE001 - not ready yet: ask again until the deadline
                last = exc
                if "already exists" in str(exc):
                    with contextlib.suppress(Exception):
                        admin.delete_topics([probe], operation_timeout=5)[probe].result(10)
                    return
                time.sleep(0.2)
        self._terminate(signal.SIGKILL)
        raise RuntimeError(f"Apache Kafka did not become ready within {self.start_timeout:.0f} s (last: {last}); "
                           f"see {self.log_path}:\n{self.log_tail()}")

    def _terminate(self, sig: int) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(sig)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def _stdout_tail(self) -> str:
        path = self._home / "stdout.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""

    def _tool_log4j(self) -> Path:
        path = self._home / "tool-log4j2.properties"
        if not path.exists():
            self._home.mkdir(parents=True, exist_ok=True)
            path.write_text("rootLogger.level=WARN\nrootLogger.appenderRef.e.ref=E\nappender.e.type=Console\n"
                            "appender.e.name=E\nappender.e.target=SYSTEM_ERR\nappender.e.layout.type=PatternLayout\n"
                            "appender.e.layout.pattern=%p %m%n\n")
        return path


_QUIET = logging.getLogger("samza_devkit.apache_kafka.readiness")
_QUIET.propagate = False
_QUIET.addHandler(logging.NullHandler())


class _PortTaken(Exception):
    pass


def _log4j_to_file(path: Path) -> str:
    return ("rootLogger.level=INFO\nrootLogger.appenderRef.f.ref=F\nappender.f.type=File\nappender.f.name=F\n"
            f"appender.f.fileName={path}\nappender.f.layout.type=PatternLayout\n"
            "appender.f.layout.pattern=[%d] %p %m (%c)%n\n"
            # the request log and state-change chatter would bury what a failing test needs
            "logger.state.name=state.change.logger\nlogger.state.level=WARN\n"
            "logger.request.name=kafka.request.logger\nlogger.request.level=WARN\n")


def _cluster_id() -> str:
    """A random cluster ID as Kafka makes them (``Uuid.randomUuid``: URL-safe base64 of 16 bytes), never one that
    starts with '-', which the storage tool would take for an option (one ID in 64 did)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cluster_id.startswith("-"):
            return cluster_id


def _jaas_quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _free_ports(names: list[str], host: str = "127.0.0.1") -> dict[str, int]:
    """Ports free right now on ``host`` and loopback, below the kernel's ephemeral range: Kafka needs the controller's
    port written in its configuration before it starts, so it cannot bind 0 itself (``start()`` chooses again if one
    was taken).

    Below the ephemeral range because clients outlive brokers here: librdkafka keeps reconnecting to a stopped
    broker's port, and a port from the ephemeral range is soon handed to another listener, such as the socket a
    Spark driver opens for its Python worker to connect back to, which then meets a Kafka client instead (Spark
    fails that worker: "Authentication failed")."""
    low = _ephemeral_low()
    ports: dict[str, int] = {}
    rng = random.Random()
    while len(ports) < len(names):
        port = rng.randrange(20000, low)
        if port in ports.values():
            continue
        try:
            for address in {host, "127.0.0.1"}:
                with socket.socket() as sock:
                    sock.bind((address, port))
        except OSError:
            continue
        ports[names[len(ports)]] = port
    return ports


def _ephemeral_low() -> int:
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768  # Linux's default
    return max(low, 21000)


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java:
        raise RuntimeError("no 'java' on PATH (and no JAVA_HOME): Apache Kafka needs Java 17 or newer")
    return java


_LAUNCHER = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="apache-kafka-launcher")


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m samza_devkit.apache_kafka",
                                     description=f"Apache Kafka {KAFKA_VERSION}, one KRaft node on 127.0.0.1")
    parser.add_argument("--port", type=int, default=9092, help="the PLAINTEXT listener's port (0: a free one)")
    parser.add_argument("--data-dir", help="kept and reused across runs (default: a temporary one, removed)")
    args = parser.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with ApacheKafkaBroker(args.data_dir, port=args.port) as broker:
        print(f"listening on {broker.bootstrap_servers} (log: {broker.log_path})", flush=True)
        while not stop.wait(1) and broker.running:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
