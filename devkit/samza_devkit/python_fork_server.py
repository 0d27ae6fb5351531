"""Spark's Python workers started by fork from an interpreter that has already imported them (tests only).

Why: Spark starts some Python workers as plain processes and gives each a fixed 10 s to connect back
(``PythonWorkerFactory.createSimpleWorker`` in Spark 4: ``Selector.select(10000)``, not configurable; the
``spark.python.authenticate.socketTimeout`` that follows covers only the handshake after the connection). The
driver's streaming source runner and the data source planner runners are such workers, one or more per query
start. Each imports PySpark, pyarrow and NumPy before it connects: about 0.6 CPU-seconds. On two cores at a load of
3-4 per core a new process gets a small share of a core, the import takes 5-11 s of wall time (measured), and
Spark fails the query with "Python worker failed to connect back". Spark's own executors avoid the cost by forking
workers from ``pyspark.daemon``; the driver-side runners do not.

So the devkit does for the test sessions what Spark's daemon does for executors: a server process imports what
the workers import once, and ``PYSPARK_PYTHON`` is a small client (:data:`CLIENT_SCRIPT`) that asks it for a
fork. The child takes the client's standard streams (passed over a Unix socket), environment, working directory
and arguments, and runs ``-m MODULE`` as ``__main__`` would; the client forwards signals to it, and exits with its
status. A worker then costs a fork instead of an interpreter start: the suite saves that CPU at every query start
too. It changes nothing a test checks: the same modules run, in a process of the same interpreter.

Even a fork may wait seconds for a core on a machine loaded far past its cores. So on a Unix domain socket (the
test sessions set ``spark.python.unix.domain.socket.enabled``) the client itself, a process that imports nothing,
opens the connection back to Spark before it asks for the fork, and the worker writes on it: Spark's 10 s then
cover only the client's start, and what follows the connection (the worker's pid) Spark waits for without a limit.

The client runs the real interpreter itself (``exec``) whenever the server cannot serve it: no server, another
network namespace (the cluster tests' workers live in their own, and a fork from here would live in this one), or
arguments other than ``-m MODULE``. ``SAMZA_TEST_FORK_SERVER=0`` turns it off.
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import socket
import stat
import struct
import sys
import tempfile
import time
import traceback
from pathlib import Path

ENV_SWITCH = "SAMZA_TEST_FORK_SERVER"
ENV_SOCKET = "SAMZA_DEVKIT_FORK_SERVER_SOCKET"
ENV_NETNS = "SAMZA_DEVKIT_FORK_SERVER_NETNS"
ENV_PYTHON = "SAMZA_DEVKIT_FORK_SERVER_PYTHON"

#: what Spark's Python workers import before they connect back, and what they import to read our sources
PRELOAD = (
    "pyspark.worker",
    "pyspark.daemon",
    "pyspark.sql.streaming.python_streaming_source_runner",
    "pyspark.sql.worker.plan_data_source_read",
    "pyspark.sql.worker.create_data_source",
    "pyspark.sql.worker.lookup_data_sources",
    "pyspark.sql.worker.commit_data_source_write",
    "pyspark.sql.worker.write_into_data_source",
    "pyspark_samza_kafka",
    "pyspark_samza_kinesis",
    "spark_samza_source.kafka.source",
    "spark_samza_source.kinesis.source",
)

_STATUS = struct.Struct("!i")


def network_namespace() -> str:
    try:
        return str(os.stat("/proc/self/ns/net").st_ino)
    except OSError:
        return ""


def enabled() -> bool:
    return os.environ.get(ENV_SWITCH, "1").strip() not in ("0", "false", "no", "off")


# ---- the server ----------------------------------------------------------------------------------------------


def _preload() -> list[str]:
    """Import what the workers will import; the names that failed (a PySpark without that module) are returned."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # no BLAS thread pool to be forked half-way
    failed = []
    for name in PRELOAD:
        try:
            __import__(name)
        except Exception:  # noqa: BLE001 - a module another PySpark version lacks: its workers import it as usual
            failed.append(name)
    _import_what_aws_clients_import()
    return failed


def _import_what_aws_clients_import() -> None:
    """boto3, what botocore imports while it makes a client (its parsers, serializers, retry handlers, HTTP session)
    and the data it parses from JSON (endpoints, partitions, each service's model and rules): the samza-kinesis
    runners and workers, and every store on S3 or DynamoDB, pay for them at their first client, about 0.5 s of CPU
    for the imports and 0.1-0.2 s per service in each new process. Throwaway clients with made-up credentials, made
    through the package's own sessions (whose data loader is one per process), pull them in (no request is sent);
    the clients themselves are not kept."""
    try:
        from spark_samza_source.metadata.aws_clients import boto3_session

        session = boto3_session(region_name="us-east-1", aws_access_key_id="preload", aws_secret_access_key="preload")
        for service in ("kinesis", "dynamodb", "s3", "sts"):
            session.client(service, endpoint_url="http://127.0.0.1:9")
    except Exception:  # noqa: BLE001 - without boto3 the workers import what they need as usual
        pass


def _run_child(conn: socket.socket, listener: socket.socket, request: dict, fds: list[int]) -> None:
    """In the forked child: become the worker the client would have started, then run its module."""
    try:
        listener.close()
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
            os.close(fd)
        if len(fds) > 3:
            _use_connection_to_spark(fds[3], request["env"].get("PYTHON_WORKER_FACTORY_SOCK_PATH"))
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        extra = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[0:0] = [request["cwd"]] + [p for p in extra if p not in sys.path]
        _die_with_client(request["client_pid"])
        conn.sendall(_STATUS.pack(os.getpid()))
        conn.close()
        import runpy

        sys.argv = [request["module"]] + request["args"]
        # as in ``python -m``: the module runs as __main__ only (its preloaded copy served its imports)
        sys.modules.pop(request["module"], None)
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:  # noqa: BLE001 - the worker's own failure: shown on its stderr, as Python would
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed pipe: nothing left to show
            pass
    os._exit(code)


def _use_connection_to_spark(fd: int, path: str | None) -> None:
    """The worker's first connection back to Spark is the one its client already opened (see
    ``python_fork_client._connect_back_to_spark``): PySpark's workers all connect through
    ``pyspark.worker_util.get_sock_file_to_executor``, which calls its module's ``local_connect_and_auth``."""
    import pyspark.worker_util as worker_util

    connect = worker_util.local_connect_and_auth
    opened = [socket.socket(fileno=fd)]

    def connected_already(conn_info, auth_secret):
        if opened and conn_info == path and auth_secret is None:
            sock = opened.pop()
            sock.settimeout(int(os.environ.get("SPARK_AUTH_SOCKET_TIMEOUT", 15)))  # as PySpark's own connect
            return sock.makefile("rwb", int(os.environ.get("SPARK_BUFFER_SIZE", 65536))), sock
        return connect(conn_info, auth_secret)

    worker_util.local_connect_and_auth = connected_already


def _die_with_client(client_pid: int) -> None:
    """Spark may kill the client (the process it started) outright: the worker must not outlive it."""
    import threading

    try:
        pidfd = os.pidfd_open(client_pid)
    except (AttributeError, OSError):
        return

    def watch():
        select.select([pidfd], [], [])
        os._exit(137)

    threading.Thread(target=watch, daemon=True, name="fork-client-watch").start()


def serve(socket_path: str, parent: int) -> None:
    """Accept fork requests on ``socket_path`` until ``parent`` (the test process) is gone."""
    failed = _preload()
    if failed:
        print(f"fork server: not preloaded (imported by the workers themselves): {', '.join(failed)}",
              file=sys.stderr, flush=True)
    # What was preloaded lives as long as every child: out of their collections (the frozen generation is inherited
    # by fork), as the product's reads do for a reused worker (spark_samza_source/source/worker_heap.py)
    gc.collect()
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path + ".tmp")
    listener.listen(64)
    os.replace(socket_path + ".tmp", socket_path)  # clients find it only once it listens
    waiting: dict[int, socket.socket] = {}  # child pid -> its client's connection, for the exit status
    while os.getppid() == parent:
        readable, _, _ = select.select([listener], [], [], 0.2)
        if readable:
            _accept(listener, waiting)
        _reap(waiting)


def _accept(listener: socket.socket, waiting: dict[int, socket.socket]) -> None:
    conn, _ = listener.accept()
    try:
        raw, fds, _, _ = socket.recv_fds(conn, 1 << 20, 4)
        request = json.loads(raw)
    except (OSError, ValueError):
        conn.close()
        return
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _run_child(conn, listener, request, fds)
    for fd in fds:
        os.close(fd)
    waiting[pid] = conn


def _reap(waiting: dict[int, socket.socket]) -> None:
    while waiting:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = waiting.pop(pid, None)
        if conn is not None:
            try:
                conn.sendall(_STATUS.pack(os.waitstatus_to_exitcode(status)))
            except OSError:
                pass
            conn.close()


# ---- starting it for a test session ------------------------------------------------------------------------

CLIENT_SCRIPT = Path(__file__).with_name("python_fork_client.py")
_servers: list = []  # the servers this process started (each ends by itself once this process is gone)


def ready(env: dict[str, str]) -> bool:
    """Whether the server :func:`start` returned ``env`` for listens yet (until then clients run the interpreter)."""
    return os.path.exists(env[ENV_SOCKET])


def wait_ready(env: dict[str, str] | None, timeout: float = 60.0) -> dict[str, str] | None:
    """``env`` once its server listens (its imports done: seconds on a busy machine); None, and one line saying so,
    if it died or did not listen within ``timeout`` s of a quiet machine (the workers then start as usual)."""
    if env is None:
        return None
    from .waits import deadline_after

    deadline = deadline_after(timeout)
    server = _servers[-1]
    while not ready(env):
        if server.poll() is not None or time.monotonic() > deadline:
            why = f"exited {server.returncode}" if server.poll() is not None else "not listening in time"
            print(f"fork server not used ({why}): Spark's Python workers start as fresh interpreters",
                  file=sys.stderr, flush=True)
            return None
        time.sleep(0.05)
    return env


def start(python: str = sys.executable) -> dict[str, str] | None:
    """Start a server for this process; the environment a Spark session needs to use it (``PYSPARK_PYTHON`` among
    it), or None when it is turned off or cannot start (the workers then start as usual)."""
    if not enabled() or not hasattr(socket, "send_fds") or not hasattr(os, "pidfd_open"):
        return None
    work = Path(tempfile.mkdtemp(prefix="samza-fork-server-"))
    socket_path = str(work / "server.sock")
    launcher = work / "python"
    launcher.write_text(f'#!/bin/sh\nexec "{python}" -I -S "{CLIENT_SCRIPT}" "$@"\n')
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    import subprocess

    _servers.append(subprocess.Popen([python, "-m", "samza_devkit.python_fork_server", socket_path,
                                      str(os.getpid())], stdin=subprocess.DEVNULL, start_new_session=True))
    # PYSPARK_DRIVER_PYTHON too: Spark runs the workers of data sources it finds by entry point (samza-kafka,
    # samza-kinesis) with that one (PythonUtils.defaultPythonExec), not with the session's PYSPARK_PYTHON
    return {"PYSPARK_PYTHON": str(launcher), "PYSPARK_DRIVER_PYTHON": str(launcher), ENV_SOCKET: socket_path,
            ENV_NETNS: network_namespace(), ENV_PYTHON: python}


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
