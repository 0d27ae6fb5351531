"""The ``PYSPARK_PYTHON`` of the test sessions: ask the fork server for a worker, else be the interpreter.

Run as ``python -I -S python_fork_client.py -m MODULE ARGS...`` (the launcher script ``python_fork_server.start``
writes): only the standard library, no site-packages, so that it starts in milliseconds. It hands its standard
streams, environment, working directory and arguments to the server (see ``python_fork_server``), forwards
SIGTERM, SIGINT and SIGHUP to the worker it gets, and exits with the worker's status. Whenever the server cannot
serve (no server, another network namespace, anything but ``-m MODULE``), it replaces itself with the real
interpreter, so Spark sees exactly the process it asked for.
"""

import json
import os
import signal
import socket
import struct
import sys

_STATUS = struct.Struct("!i")


def _be_the_interpreter():
    python = os.environ.get("SAMZA_DEVKIT_FORK_SERVER_PYTHON") or sys.executable
    os.execv(python, [python] + sys.argv[1:])


def _served(args):
    path = os.environ.get("SAMZA_DEVKIT_FORK_SERVER_SOCKET")
    if not path or len(args) < 2 or args[0] != "-m" or os.environ.get("SAMZA_TEST_FORK_SERVER", "1") == "0":
        return None
    try:
        if str(os.stat("/proc/self/ns/net").st_ino) != os.environ.get("SAMZA_DEVKIT_FORK_SERVER_NETNS"):
            return None
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
    except OSError:
        return None
    request = {"module": args[1], "args": args[2:], "env": dict(os.environ), "cwd": os.getcwd(),
               "client_pid": os.getpid()}
    fds = [0, 1, 2]
    back = _connect_back_to_spark()
    if back is not None:
        fds.append(back.fileno())
    try:
        socket.send_fds(conn, [json.dumps(request).encode()], fds)
        return conn, _receive_int(conn)
    except (OSError, EOFError):
        # the caller becomes the interpreter; a connection already opened back to Spark ends here, and Spark
        # fails this one worker on it (as it would a worker that died at start) rather than wait for a second one
        conn.close()
        return None
    finally:
        if back is not None:
            back.close()  # the worker holds its own copy: Spark sees the end of the connection when it exits


def _connect_back_to_spark():
    """The connection Spark's simple worker must open within 10 s, opened by this small process at once.

    Only on a Unix domain socket without a secret (Spark's setting ``spark.python.unix.domain.socket.enabled``):
    Spark then waits for the worker's first bytes (its pid) without a time limit, so the forked worker may take
    what a busy machine gives it. A TCP connection is followed by an authentication with a time limit: the worker
    connects by itself there. None when there is nothing to connect to."""
    path = os.environ.get("PYTHON_WORKER_FACTORY_SOCK_PATH")
    if not path or os.environ.get("PYTHON_WORKER_FACTORY_SECRET"):
        return None
    back = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        back.connect(path)
    except OSError:
        back.close()
        return None
    return back


def _receive_int(conn):
    data = b""
    while len(data) < _STATUS.size:
        chunk = conn.recv(_STATUS.size - len(data))
        if not chunk:
            raise EOFError("the fork server closed the connection")
        data += chunk
    return _STATUS.unpack(data)[0]


def main():
    served = _served(sys.argv[1:])
    if served is None:
        _be_the_interpreter()
    conn, worker = served

    def forward(signum, _frame):
        try:
            os.kill(worker, signum)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)
    try:
        code = _receive_int(conn)
    except (OSError, EOFError):
        code = 1
    sys.exit(code if code >= 0 else 128 - code)


if __name__ == "__main__":
    main()
