"""Launch moto in server mode on loopback, for tests, ``make demo`` and benchmarks.

Why a separate process: the moto server answers real HTTP (so boto3, pyarrow's S3 client and Spark's Python
workers all talk to it exactly as to AWS), and running it outside the test process keeps it off that process's
GIL and safe to ``fork`` around. Port 0 lets the kernel pick a free port, so there is no race between choosing a
port and binding it; the launcher reports the port it actually bound.

Command line (runs until SIGTERM or SIGINT)::

    python -m samza_devkit.moto_server --port 0
    listening on http://127.0.0.1:PORT

From Python::

    with MotoServerProcess() as endpoint:   # "http://127.0.0.1:PORT", answering requests
        ...
"""

from __future__ import annotations

import argparse
import logging
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from abc import ABC, abstractmethod
from pathlib import Path

from .waits import deadline_after

__all__ = ["MotoServerProcess", "wait_until_answering", "main"]

_LISTENING = "listening on "


def wait_until_answering(endpoint: str, timeout: float = 30.0) -> None:
    """Block until an HTTP request to ``endpoint`` gets any HTTP answer; RuntimeError after ``timeout``."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never via a proxy
    deadline = deadline_after(timeout)
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            with opener.open(endpoint.rstrip("/") + "/moto-api/", timeout=2):
                return
        except urllib.error.HTTPError:
            return  # an HTTP error status is still an answer
        except OSError as exc:
            last = exc
            time.sleep(0.05)
    raise RuntimeError(f"moto server at {endpoint} did not answer within {timeout:.0f}s (last error: {last})")


class ListeningChildProcess(ABC):
    """A server in a child process that prints ``listening on <endpoint>`` once bound (port 0: the kernel picks).

    ``start()`` returns the endpoint once the server answers HTTP; ``stop()`` sends SIGTERM and waits. Subclasses
    say what to run (:meth:`command`) and under which name errors speak of it.
    """

    name = "server"

    def __init__(self, startup_timeout: float = 60.0) -> None:
        self.startup_timeout = startup_timeout
        self.endpoint: str | None = None
        self.stderr_path: Path | None = None
        self._proc: subprocess.Popen[str] | None = None

    @abstractmethod
    def command(self) -> tuple[list[str], dict[str, str] | None]:
        """The command line and environment (None: this process's) of the child."""

    @property
    def exit_code(self) -> int | None:
        """The child's exit code once it has gone; None while it runs (or before it started)."""
        return None if self._proc is None else self._proc.poll()

    def start(self) -> str:
        cmd, env = self.command()
        # the child's standard error in a file of its own, so a server that died can be asked why
        self.stderr_path = Path(tempfile.mkstemp(prefix=f"samza-{self.name.replace(' ', '-')}-", suffix=".log")[1])
        with open(self.stderr_path, "wb") as err:
            self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1, env=env)
        lines: queue.Queue[str] = queue.Queue()

        def pump() -> None:
            assert self._proc is not None and self._proc.stdout is not None
            for line in self._proc.stdout:
                lines.put(line)
            lines.put("")  # EOF

        threading.Thread(target=pump, name=f"{self.name}-stdout", daemon=True).start()
        deadline = deadline_after(self.startup_timeout)
        while True:
            try:
                line = lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                self.stop()
                raise RuntimeError(f"{self.name} did not start within {self.startup_timeout:.0f}s") from None
            if line.startswith(_LISTENING):
                self.endpoint = line[len(_LISTENING):].strip()
                break
            if line == "":
                code = self._proc.wait()
                raise RuntimeError(f"{self.name} exited with code {code} before listening: "
                                   f"{self.stderr_path.read_text(errors='replace')[-2000:]}")
        wait_until_answering(self.endpoint, timeout=max(deadline - time.monotonic(), 1.0))
        return self.endpoint

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class MotoServerProcess(ListeningChildProcess):
    """A moto server in a child process (``python -m samza_devkit.moto_server``).

    The child exits by itself if this process dies (it watches its parent), so no orphan survives a killed
    test run.
    """

    name = "moto server"

    def __init__(self, host: str = "127.0.0.1", port: int = 0, startup_timeout: float = 60.0) -> None:
        super().__init__(startup_timeout)
        self.host = host
        self.port = port

    def command(self) -> tuple[list[str], dict[str, str] | None]:
        return ([sys.executable, "-m", "samza_devkit.moto_server",
                 "--host", self.host, "--port", str(self.port), "--parent-pid", str(os.getpid())], None)


def serialize_methods(owner: type, names: tuple[str, ...], flag: str) -> None:
    """Wrap each method ``names`` of class ``owner`` in one shared lock, once per process (``flag`` marks it done).

    moto's threaded server runs requests concurrently and its models do check-then-act without locks; the real
    services are atomic where these methods are used."""
    import functools

    if getattr(owner, flag, False):
        return
    lock = threading.RLock()

    def locked(method):
        @functools.wraps(method)
        def wrapper(*args, **kwargs):
            with lock:
                return method(*args, **kwargs)

        return wrapper

    for name in names:
        setattr(owner, name, locked(getattr(owner, name)))
    setattr(owner, flag, True)


def serialize_s3_conditional_writes() -> None:
    """Make moto's conditional S3 writes atomic, as S3's are.

    moto checks ``If-None-Match: *`` / ``If-Match`` in its response handler (``S3Response.put_object`` and
    ``delete_object``) and writes afterwards, without a lock: two racing ``PutObject(IfNoneMatch="*")`` on one key
    could both pass the check. S3 lets exactly one win (the other gets 412, or 409 to retry). One lock around the
    handlers restores that in the emulator. Idempotent.
    """
    from moto.s3.responses import S3Response

    serialize_methods(S3Response, ("put_object", "delete_object"), "_samza_serialized")


def serialize_dynamodb_writes() -> None:
    """Make moto's DynamoDB writes atomic, as DynamoDB's are.

    moto's threaded server checks a ConditionExpression and then writes without a lock, so two concurrent
    ``put_item(ConditionExpression="attribute_not_exists(...)")`` calls can both succeed (seen under load in
    ``test_put_if_absent_has_one_winner_across_threads``); real DynamoDB never lets both win. One lock around
    every write restores that guarantee in the emulator. Idempotent.
    """
    from moto.dynamodb.models import DynamoDBBackend

    serialize_methods(DynamoDBBackend, ("put_item", "delete_item", "update_item", "transact_write_items"),
                      "_samza_serialized")


def _devkit_moto_server(host: str, port: int):
    """moto's threaded server with the devkit's middlewares around its application: fault injection
    (``aws_faults``: AWS errors answered over HTTP, so botocore's real retry path is what tests exercise) over the
    GetRecords log (``moto_request_log``, served at its own path)."""
    from moto.server import DomainDispatcherApplication, MotoRequestHandler, ThreadedMotoServer, create_backend_app
    from werkzeug.serving import make_server

    from .aws_faults import FaultInjectionMiddleware
    from .moto_request_log import wrap_app

    class DevkitMotoServer(ThreadedMotoServer):
        def _server_entry(self) -> None:  # as moto's, with the middlewares around the application
            app = FaultInjectionMiddleware(wrap_app(DomainDispatcherApplication(create_backend_app)))
            self._server = make_server(self._ip_address, self._port, app, True, request_handler=MotoRequestHandler)
            self._server_ready_event.set()
            self._server.serve_forever()

    return DevkitMotoServer(ip_address=host, port=port, verbose=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run moto (AWS mock) in server mode until SIGTERM.")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback only)")
    parser.add_argument("--port", type=int, default=0, help="port to bind; 0 picks a free port (default)")
    parser.add_argument("--parent-pid", type=int, default=0,
                        help="exit when this parent process is gone (used by MotoServerProcess)")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    args = parser.parse_args(argv)

    logging.getLogger("werkzeug").setLevel(logging.INFO if args.verbose else logging.WARNING)
    from .kinesis_helpers import apply_moto_kinesis_fixes
    from .moto_request_log import install as install_request_log

    # moto 5.2 reshards unlike Kinesis (records keep landing in closed parents): see kinesis_helpers.
    apply_moto_kinesis_fixes()
    serialize_s3_conditional_writes()
    serialize_dynamodb_writes()
    install_request_log()
    server = _devkit_moto_server(args.host, args.port)
    server.start()
    host, port = server.get_host_and_port()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print(f"{_LISTENING}http://{host}:{port}", flush=True)
    while not stop.wait(1.0):
        if args.parent_pid and os.getppid() != args.parent_pid:
            break  # our parent died (we were re-parented): do not outlive it
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
