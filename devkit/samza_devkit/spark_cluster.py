"""A Spark standalone cluster for tests: a master and workers, each worker on a host of its own.

``SparkCluster.start(root, workers=3)`` makes a :class:`~samza_devkit.netlab.NetLab` (a network namespace per
worker on a bridge, 198.18.0.0/15 addresses), starts the master on the bridge's first address (root namespace)
and one Worker per namespace (``spark-class ...deploy.worker.Worker``, two cores each, ``SPARK_LOCAL_IP`` its own
address), so its executors and their Python workers run in that namespace too. It returns once the master counts
every worker alive (its JSON status page, asked, never slept). If namespaces cannot be made (no privilege),
``fallback`` holds the one-line reason and everything runs on loopback, workers as separate processes; ``cut``
and ``heal`` then raise :class:`CutUnsupported`. ``SAMZA_TEST_CLUSTER_ONE_HOST=1`` asks for that fallback.

- ``driver(name, host, *args)``: ``samza_devkit.fault_driver`` on this cluster, from ``host``'s namespace (None:
  the root namespace), in a process group of its own (``ClusterDriver.kill()`` is a SIGKILL of it all);
- ``executors(host)`` / ``kill_executor(pid)``: the executor JVMs a worker launched, SIGKILLed like a lost machine;
- ``python_workers(host)``: the Python processes under a worker's executors (what a leak check looks into);
- ``kill_worker(host)`` / ``start_worker(host)``: a worker host lost (its Worker and executors SIGKILLed) and back;
- ``cut(host, address)`` / ``heal(...)``: see ``netlab``;
- ``connections(host, address, port)``: the TCP connections ``host`` holds open to a service now (``ss``);
- ``close()``: every process stopped (the master, workers and drivers also die with the process that started them:
  ``PR_SET_PDEATHSIG``; executors exit when their worker goes), then the namespaces and links removed.

``committed_parquet_rows(sink, columns)`` reads a Parquet sink through its ``_spark_metadata`` log only: the files
of a killed task attempt stay in the directory but are not part of the output (``committed_parquet_rows_by_batch``:
the same, batch by batch).
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from .child_process import popen_dying_with_this_process
from .netlab import NetLab, available
from .waits import deadline_after

__all__ = ["ClusterDriver", "CutUnsupported", "SparkCluster", "committed_parquet_rows",
           "committed_parquet_rows_by_batch"]

_REPO_CONF = Path(__file__).resolve().parents[2] / "conf"
_LAUNCHER = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="spark-cluster-launcher")
#: the bridge addresses of the root namespace: what each is for
MASTER, BROKER, MOTO, KINESIS_MOCK = 0, 1, 2, 3
#: a network metadata store (a second moto, DynamoDB), apart from the streams' endpoint so a cut can single it out
STORE = 4
#: addresses the root namespace binds on the bridge (.1 to .10, before the hosts' .11 on): the roles above and spares
_SERVICE_ADDRESSES = 10


class CutUnsupported(RuntimeError):
    """The cluster fell back to one host: there is no link to cut."""


def _spark_class() -> str:
    import pyspark

    return str(Path(pyspark.__file__).parent / "bin" / "spark-class")


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _launch(cmd: list[str], env: dict[str, str], log: Path, **kwargs) -> subprocess.Popen:
    with open(log, "ab") as out:
        # from one long-lived thread: PR_SET_PDEATHSIG fires when the thread that forked the child ends
        return _LAUNCHER.submit(popen_dying_with_this_process, cmd, signal.SIGKILL, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, env=env, close_fds=True, **kwargs).result()


def _stop(proc: subprocess.Popen | None, sig: int = signal.SIGTERM, group: bool = False) -> None:
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, sig) if group else proc.send_signal(sig)
        proc.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL) if group else proc.kill()
        proc.wait(20)
    except ProcessLookupError:
        pass


def _children(pid: int) -> list[int]:
    """The children of process ``pid``: Linux lists them per thread (the one that forked each)."""
    out = []
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            out += [int(p) for p in children.read_text().split()]
        except OSError:
            continue
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@dataclass
class ClusterDriver:
    """One ``fault_driver`` run: its JSON-line events, its log, and a SIGKILL of its whole process group."""

    name: str
    host: str | None
    proc: subprocess.Popen
    events_path: Path
    log_path: Path

    def events(self) -> list[dict]:
        if not self.events_path.exists():
            return []
        return [json.loads(line) for line in self.events_path.read_text().splitlines() if line.startswith("{")]

    def has(self, event: str) -> bool:
        return any(e["event"] == event for e in self.events())

    def wait(self, timeout: float) -> int:
        """Its exit code; on timeout it is killed and the test fails naming its log."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"driver {self.name} still running after {timeout:.0f} s; log: {self.log_path}\n"
                                 + self.log_tail()) from None

    def kill(self) -> None:
        _stop(self.proc, signal.SIGKILL, group=True)

    def log_tail(self, n: int = 30) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])


@dataclass
class SparkCluster:
    """See the module docstring. ``workers``: host name -> Worker process."""

    root: Path
    lab: NetLab | None
    fallback: str | None
    master_url: str = ""
    master_host: str = "127.0.0.1"
    workers: dict[str, subprocess.Popen] = field(default_factory=dict)
    worker_ports: dict[str, int] = field(default_factory=dict)
    drivers: list[ClusterDriver] = field(default_factory=list)
    _master: subprocess.Popen | None = None
    _status_url: str = ""
    _env: dict[str, str] = field(default_factory=dict)

    # ------------------------------------------------------------------------------ lifecycle
    @classmethod
    def start(cls, root: str | os.PathLike, workers: int = 3, timeout: float = 120.0) -> SparkCluster:
        root = Path(root)
        root.mkdir(parents=True, exist_ok=True)
        reason = ("one host asked for (SAMZA_TEST_CLUSTER_ONE_HOST)" if os.environ.get("SAMZA_TEST_CLUSTER_ONE_HOST")
                  else available())
        names = [f"w{i}" for i in range(workers)] + ["d0", "d1"]  # worker hosts, then two hosts for drivers
        lab = NetLab.create(names, services=_SERVICE_ADDRESSES) if reason is None else None
        cluster = cls(root, lab, reason)
        try:
            cluster._start_master()
            for name in names[:workers]:
                cluster._start_worker(name)
            cluster._wait_workers(workers, timeout)
        except BaseException:
            cluster.close()
            raise
        return cluster

    def close(self) -> None:
        for driver in self.drivers:
            driver.kill()
        for proc in self.workers.values():
            _stop(proc)
        _stop(self._master)
        if self.lab is not None:
            self.lab.close()

    @property
    def worker_hosts(self) -> list[str]:
        return list(self.workers)

    def address(self, host: str | None) -> str:
        """The address ``host`` binds (None: the root namespace's, where the master is)."""
        if self.lab is None or host is None:
            return self.master_host
        return self.lab.address(host)

    def service_address(self, role: int) -> str:
        """The address a root-namespace service binds (``BROKER``, ``MOTO``...): its own, so a cut can single it
        out; loopback in the fallback."""
        return self.lab.service_address(role) if self.lab is not None else "127.0.0.1"

    # ------------------------------------------------------------------------------ drivers
    def driver(self, name: str, host: str | None, *args: str, conf: dict[str, str] | None = None) -> ClusterDriver:
        """Start ``python -m samza_devkit.fault_driver --master <this cluster> ARGS`` from ``host``."""
        address = self.address(host)
        settings = {"spark.driver.host": address, "spark.driver.bindAddress": address,
                    # one one-core executor per worker (the master spreads an application out), leaving each
                    # worker a core for a second driver's application
                    "spark.executor.memory": "512m", "spark.executor.cores": "1", "spark.cores.max": "2",
                    # a lost executor's tasks are retried at once; a slow one is not given up on
                    "spark.task.maxFailures": "4", "spark.locality.wait": "0s", "spark.ui.showConsoleProgress": "false",
                    # the cluster's logging (task attempts logged, see _base_env), not the devkit's quieter one
                    "spark.driver.extraJavaOptions": f"-Dlog4j.configurationFile=file:{self._log4j}",
                    **(conf or {})}
        cmd = [sys.executable, "-m", "samza_devkit.fault_driver", "--master", self.master_url,
               *[f"--conf={k}={v}" for k, v in settings.items()], *args]
        if self.lab is not None:
            cmd = self.lab.in_host(host, cmd)
        env = {**self._env, "SPARK_LOCAL_IP": address}
        events, log = self.root / f"{name}.jsonl", self.root / f"{name}.log"
        with open(events, "w") as out, open(log, "w") as err:
            proc = _LAUNCHER.submit(popen_dying_with_this_process, cmd, signal.SIGKILL, stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=err, env=env, cwd=self.root, start_new_session=True).result()
        driver = ClusterDriver(name, host, proc, events, log)
        self.drivers.append(driver)
        return driver

    # ------------------------------------------------------------------------------ faults
    def executors(self, host: str) -> list[int]:
        """The pids of the executor JVMs ``host``'s worker runs now."""
        return [pid for pid in _children(self.workers[host].pid) if "CoarseGrainedExecutorBackend" in _cmdline(pid)]

    def executor_of(self, pid: int) -> tuple[str, int] | None:
        """(worker host, executor JVM pid) of the executor process ``pid`` descends from (a Python worker's pid)."""
        for host in self.workers:
            for executor in self.executors(host):
                if _descends_from(pid, executor):
                    return host, executor
        return None

    def python_workers(self, host: str) -> list[int]:
        """The pids of the Python processes (PySpark's daemon and its workers) under ``host``'s executors."""
        found, todo = [], list(self.executors(host))
        while todo:
            pid = todo.pop()
            for child in _children(pid):
                todo.append(child)
                if "python" in _cmdline(child).split(" ", 1)[0]:
                    found.append(child)
        return found

    def kill_executor(self, pid: int) -> None:
        os.kill(pid, signal.SIGKILL)

    def kill_worker(self, host: str) -> None:
        """SIGKILL ``host``'s Worker and its executors at once: the host is lost (``start_worker`` brings it back)."""
        executors = self.executors(host)
        _stop(self.workers[host], signal.SIGKILL)
        for pid in executors:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def start_worker(self, host: str, timeout: float = 120.0) -> None:
        """Restart ``host``'s Worker (after ``kill_worker``); returns once the master has it alive."""
        before = self._alive_worker_ids(host)
        # the master refuses a worker at an address it still has alive: wait until it has seen the old one go
        _poll(lambda: not before or not self._alive_worker_ids(host), timeout,
              f"the master forgetting the lost worker {host}")
        self._start_worker(host)
        _poll(lambda: self._alive_worker_ids(host), timeout, f"the restarted worker {host} registered")

    def _alive_worker_ids(self, host: str) -> set[str]:
        """The ids of the workers the master has alive at ``host``'s address and port (the fallback's workers
        share an address)."""
        where = (self.address(host), self.worker_ports[host])
        try:
            with urllib.request.urlopen(self._status_url, timeout=2) as answer:
                status = json.load(answer)
        except (OSError, ValueError):
            return set()
        return {w["id"] for w in status.get("workers", [])
                if w.get("state") == "ALIVE" and (w.get("host"), w.get("port")) == where}

    def connections(self, host: str, address: str, port: int | None = None) -> int:
        """How many TCP connections from ``host``'s namespace to ``address`` (and ``port``) are established now
        (``ss`` run in that namespace); :class:`CutUnsupported` in the one-host fallback, where hosts share one."""
        if self.lab is None:
            raise CutUnsupported(f"no namespace of its own for {host}: {self.fallback}")
        where = f"{address}:{port}" if port is not None else address
        done = subprocess.run(self.lab.in_host(host, ["ss", "-Htn", "state", "established", "dst", where]),
                              capture_output=True, text=True, timeout=30, check=True)
        return len([line for line in done.stdout.splitlines() if line.strip()])

    def cut(self, host: str, address: str) -> None:
        if self.lab is None:
            raise CutUnsupported(f"no link to cut: {self.fallback}")
        self.lab.cut(host, address)

    def heal(self, host: str, address: str) -> None:
        if self.lab is not None:
            self.lab.heal(host, address)

    # ------------------------------------------------------------------------------ internals
    @property
    def _log4j(self) -> Path:
        return self.root / "spark-conf" / "log4j2.properties"

    def _base_env(self) -> dict[str, str]:
        conf_dir = self.root / "spark-conf"
        conf_dir.mkdir(exist_ok=True)
        if (_REPO_CONF / "log4j2.properties").exists():
            shutil.copy(_REPO_CONF / "log4j2.properties", conf_dir / "log4j2.properties")
            with open(conf_dir / "log4j2.properties", "a") as conf:
                # every task attempt's start, speculation and kill in the driver's log: what a test reads of them
                conf.write("logger.tasks.name = org.apache.spark.scheduler.TaskSetManager\n"
                           "logger.tasks.level = info\n")
        env = dict(os.environ)
        # The logging configuration is named to each JVM (the master and workers here, the driver and executors
        # by their Spark settings) rather than found on the class path through SPARK_CONF_DIR: a configuration
        # directory of the test's own on the class path would give every cluster JVM a class path of its own, and
        # the run's class-data archives (samza_devkit.jvm_class_share) are made for Spark's usual one.
        env.pop("SPARK_CONF_DIR", None)
        daemon_opts = f"-Dlog4j.configurationFile=file:{self._log4j}"
        env.update({"SPARK_DAEMON_MEMORY": "256m",
                    "SPARK_DAEMON_JAVA_OPTS": f"{env.get('SPARK_DAEMON_JAVA_OPTS', '')} {daemon_opts}".strip(),
                    "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
                    "PYSPARK_DRIVER_PYTHON": os.environ.get("PYSPARK_DRIVER_PYTHON", sys.executable)})
        env.pop("SPARK_HOME", None)  # spark-class finds the wheel's own
        # The master drops a worker it has had no heartbeat from for spark.worker.timeout (60 s). A worker these
        # tests lose is always a killed process, which the master learns of from the closed connection at once;
        # the timeout only ever fired when the whole machine stalled (a shared VM's host starving it: kernel RCU
        # stall warnings, 60 s without a heartbeat from either live worker), after which the workers re-register
        # and every executor is relaunched, minutes a test's waits never had.
        env["SPARK_MASTER_OPTS"] = f"{env.get('SPARK_MASTER_OPTS', '')} -Dspark.worker.timeout=600".strip()
        return env

    def _start_master(self) -> None:
        self._env = self._base_env()
        self.master_host = self.address(None) if self.lab is None else self.lab.service_address(MASTER)
        port, web = _free_port(self.master_host), _free_port(self.master_host)
        self.master_url = f"spark://{self.master_host}:{port}"
        self._status_url = f"http://{self.master_host}:{web}/json/"
        cmd = [_spark_class(), "org.apache.spark.deploy.master.Master", "--host", self.master_host,
               "--port", str(port), "--webui-port", str(web)]
        self._master = _launch(cmd, {**self._env, "SPARK_LOCAL_IP": self.master_host}, self.root / "master.log")

    def _start_worker(self, host: str) -> None:
        address = self.address(host)
        work = self.root / f"work-{host}"
        work.mkdir(exist_ok=True)
        # in a namespace of its own every port is free; on the fallback's shared loopback, ask for free ones
        port, web = (7078, 8081) if self.lab is not None else (_free_port(address), _free_port(address))
        self.worker_ports[host] = port
        cmd = [_spark_class(), "org.apache.spark.deploy.worker.Worker", "--host", address, "--port", str(port),
               "--webui-port", str(web), "--cores", "2", "--memory", "1g", "--work-dir", str(work), self.master_url]
        if self.lab is not None:
            cmd = self.lab.in_host(host, cmd)
        # its executors and their Python workers inherit the environment: SAMZA_DEVKIT_HOST names their host even
        # in the one-host fallback, where every address is loopback's
        env = {**self._env, "SPARK_LOCAL_IP": address, "SAMZA_DEVKIT_HOST": host}
        self.workers[host] = _launch(cmd, env, self.root / f"worker-{host}.log")

    def _wait_workers(self, count: int, timeout: float) -> None:
        deadline = deadline_after(timeout)
        last = None
        while time.monotonic() < deadline:
            for name, proc in [("master", self._master), *self.workers.items()]:
                if proc.poll() is not None:
                    log = self.root / ("master.log" if name == "master" else f"worker-{name}.log")
                    raise RuntimeError(f"Spark {name} exited with code {proc.returncode} while starting; see "
                                       f"{log}:\n{log.read_text(errors='replace')[-3000:]}")
            try:
                with urllib.request.urlopen(self._status_url, timeout=2) as answer:
                    status = json.load(answer)
                last = status
                if sum(w.get("state") == "ALIVE" for w in status.get("workers", [])) >= count:
                    return
            except (OSError, ValueError):  # not listening yet, or a page cut short while the master starts
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{count} Spark workers not registered within {timeout:.0f} s (master said {last}); "
                           f"logs in {self.root}")


def _poll(condition, timeout: float, what: str):
    deadline = deadline_after(timeout)
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")


def _descends_from(pid: int, ancestor: int) -> bool:
    for _ in range(20):
        if pid == ancestor:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        if pid <= 1:
            return False
    return False


def committed_parquet_rows(sink: str | os.PathLike, columns: list[str]) -> list[tuple]:
    """The rows (``columns`` only) of the files a Parquet sink's ``_spark_metadata`` log says are its output."""
    import pyarrow.parquet as pq

    meta = Path(sink) / "_spark_metadata"
    if not meta.is_dir():
        return []
    batches = {}
    for entry in meta.iterdir():
        stem = entry.name.removesuffix(".compact")
        if stem.isdigit():
            batches[int(stem)] = entry
    compacted = max((b for b, p in batches.items() if p.name.endswith(".compact")), default=-1)
    files: set[str] = set()
    for batch in sorted(b for b in batches if b >= compacted):
        for line in batches[batch].read_text().splitlines()[1:]:
            record = json.loads(line)
            path = record["path"].removeprefix("file://")
            if record.get("action", "add") == "add":
                files.add(path)
            else:
                files.discard(path)
    rows: list[tuple] = []
    for path in sorted(files):
        table = pq.read_table(path.removeprefix("file:"), columns=columns)
        rows.extend(zip(*(table.column(c).to_pylist() for c in columns), strict=True))
    return rows


def committed_parquet_rows_by_batch(sink: str | os.PathLike, columns: list[str]) -> dict[int, list[tuple]]:
    """:func:`committed_parquet_rows` by the batch whose ``_spark_metadata`` entry added each file ({batch id:
    rows}); for sinks whose log has not been compacted yet (Spark compacts every 10 batches by default)."""
    import pyarrow.parquet as pq

    meta = Path(sink) / "_spark_metadata"
    if not meta.is_dir():
        return {}
    if any(entry.name.endswith(".compact") for entry in meta.iterdir()):
        raise ValueError(f"{meta}: a compacted log no longer says which batch added which file")
    files: dict[str, int] = {}
    for entry in sorted((e for e in meta.iterdir() if e.name.isdigit()), key=lambda e: int(e.name)):
        for line in entry.read_text().splitlines()[1:]:
            record = json.loads(line)
            path = record["path"].removeprefix("file://")
            if record.get("action", "add") == "add":
                files[path] = int(entry.name)
            else:
                files.pop(path, None)
    rows: dict[int, list[tuple]] = {}
    for path, batch in sorted(files.items()):
        table = pq.read_table(path.removeprefix("file:"), columns=columns)
        rows.setdefault(batch, []).extend(zip(*(table.column(c).to_pylist() for c in columns), strict=True))
    return rows
