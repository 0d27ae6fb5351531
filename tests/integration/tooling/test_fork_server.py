"""The test sessions' ``PYSPARK_PYTHON`` (``samza_devkit.python_fork_server``): a worker forked from a preloaded
interpreter behaves as the process Spark asked for (arguments, environment, working directory, standard streams,
exit status, signals), dies with the client Spark started, and the client is the plain interpreter whenever the
server cannot serve it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from samza_devkit import python_fork_server as fork_server
from samza_devkit.waits import deadline_after, wait_until

_WORKER = textwrap.dedent('''
    import os, sys, time
    print("preloaded", "pyspark.worker" in sys.modules, flush=True)
    print("args", sys.argv[1:], flush=True)
    print("cwd", os.getcwd(), flush=True)
    print("env", os.environ.get("FORK_TEST_VALUE"), flush=True)
    print("parent", os.getppid(), flush=True)
    print("stdin", sys.stdin.readline().strip(), flush=True)
    print("to stderr", file=sys.stderr, flush=True)
    if sys.argv[1] == "sleep":
        time.sleep(120)
    sys.exit(int(sys.argv[2]))
''')


@pytest.fixture(scope="module")
def server_env(tmp_path_factory):
    env = fork_server.start(sys.executable)
    if env is None:
        pytest.skip("the fork server needs Linux's pidfd_open and socket.send_fds (Python 3.9+ on Linux 5.3+)")
    env = fork_server.wait_ready(env)
    assert env is not None, "the fork server did not start listening"
    modules = tmp_path_factory.mktemp("modules")
    (modules / "fork_test_worker.py").write_text(_WORKER)
    return {**os.environ, **env, "PYTHONPATH": str(modules), "FORK_TEST_VALUE": "from-the-client"}


def _start(env, *args, cwd):
    return subprocess.Popen([env["PYSPARK_PYTHON"], *args], env=env, cwd=cwd, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _lines(text: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in text.splitlines() if " " in line)


def test_a_forked_worker_is_the_process_spark_asked_for(server_env, tmp_path):
    client = _start(server_env, "-m", "fork_test_worker", "exit", "7", cwd=tmp_path)
    out, err = client.communicate("hello\n", timeout=deadline_after(60) - time.monotonic())
    seen = _lines(out)
    assert client.returncode == 7
    assert seen["preloaded"] == "True"  # forked from the server, which had imported PySpark's workers
    assert seen["args"] == "['exit', '7']" and seen["cwd"] == str(tmp_path) and seen["env"] == "from-the-client"
    assert int(seen["parent"]) != client.pid  # the server's child, not the client's
    assert seen["stdin"] == "hello" and "to stderr" in err


def test_a_signal_to_the_client_reaches_the_worker(server_env, tmp_path):
    client = _start(server_env, "-m", "fork_test_worker", "sleep", "0", cwd=tmp_path)
    client.stdin.write("x\n")
    client.stdin.flush()
    wait_until(lambda: "parent" in client.stdout.readline(), 60, "the worker to start")
    client.send_signal(signal.SIGTERM)
    client.wait(timeout=deadline_after(30) - time.monotonic())
    assert client.returncode == 128 + signal.SIGTERM  # the worker's death by SIGTERM, as the shell reports it


def test_a_worker_dies_with_a_killed_client(server_env, tmp_path):
    marker = tmp_path / "worker.pid"
    script = f"import os, time; open({str(marker)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    module_dir = tmp_path / "m"
    module_dir.mkdir()
    (module_dir / "fork_test_sleeper.py").write_text(script)
    client = _start({**server_env, "PYTHONPATH": str(module_dir)}, "-m", "fork_test_sleeper", cwd=tmp_path)
    worker = int(wait_until(lambda: marker.exists() and marker.read_text(), 60, "the worker's pid"))
    client.kill()
    client.wait()
    wait_until(lambda: not os.path.exists(f"/proc/{worker}") or _zombie(worker), 30, "the worker to end",
               seen=lambda: f"/proc/{worker} still there")


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.parametrize("case", ["not -m", "another network namespace", "switched off"])
def test_the_client_is_the_interpreter_when_the_server_cannot_serve(server_env, tmp_path, case):
    env = dict(server_env)
    args = ["-m", "fork_test_worker", "exit", "3"]
    if case == "not -m":
        args = ["-c", "import os, sys; print('parent', os.getppid()); print('preloaded', 'pyspark' in sys.modules)"]
    elif case == "another network namespace":
        env[fork_server.ENV_NETNS] = "0"
    else:
        env[fork_server.ENV_SWITCH] = "0"
    client = _start(env, *args, cwd=tmp_path)
    out, _ = client.communicate("line\n", timeout=deadline_after(60) - time.monotonic())
    seen = _lines(out)
    assert seen["preloaded"] == "False"  # a fresh interpreter: nothing imported before it ran
    assert int(seen["parent"]) == os.getpid()  # the client itself became the interpreter (exec, same process)
    assert client.returncode == (0 if case == "not -m" else 3)


_CONNECTING_WORKER = textwrap.dedent('''
    import os, sys, time
    from pyspark.worker_util import get_sock_file_to_executor
    go = sys.argv[1]
    while not os.path.exists(go):  # held back until the test saw the connection arrive without it
        time.sleep(0.05)
    with get_sock_file_to_executor() as sock_file:
        sock_file.write(b"from the worker")
        sock_file.flush()
''')


def test_the_client_opens_the_connection_back_to_spark_before_the_worker_runs(server_env, tmp_path):
    """Spark gives a simple worker 10 s to connect back, then waits for its pid without a limit: the client (a
    process of milliseconds) connects at once, and the worker, however slow, writes on that very connection."""
    import socket
    import struct

    module_dir = tmp_path / "m"
    module_dir.mkdir()
    (module_dir / "fork_test_connecting.py").write_text(_CONNECTING_WORKER)
    spark_side = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path = str(tmp_path / "spark.sock")
    spark_side.bind(path)
    spark_side.listen(1)
    spark_side.settimeout(deadline_after(60) - time.monotonic())
    go = tmp_path / "go"
    env = {**server_env, "PYTHONPATH": str(module_dir), "PYTHON_WORKER_FACTORY_SOCK_PATH": path}
    env.pop("PYTHON_WORKER_FACTORY_SECRET", None)
    client = _start(env, "-m", "fork_test_connecting", str(go), cwd=tmp_path)
    try:
        connection, _ = spark_side.accept()  # the worker is still waiting for ``go``: the client connected
        go.write_text("")
        connection.settimeout(deadline_after(60) - time.monotonic())
        received = b""
        while len(received) < 4 + len(b"from the worker"):
            chunk = connection.recv(4096)
            assert chunk, f"the connection ended after {received!r}"
            received += chunk
        client.wait(timeout=deadline_after(60) - time.monotonic())
    finally:
        if client.poll() is None:
            client.kill()
    worker_pid = struct.unpack("!i", received[:4])[0]
    assert worker_pid != client.pid  # the forked worker wrote its pid on the client's connection
    assert received[4:] == b"from the worker"
    assert client.returncode == 0


def test_a_test_sessions_python_workers_for_our_sources_are_forked(spark, kafka_broker, tmp_path):
    """Every Python process the session's JVM starts for a samza-kafka query (the source runner, the planners'
    daemons) is the fork server's client: Spark takes the interpreter for sources it finds by entry point from
    ``PYSPARK_DRIVER_PYTHON``, not from the session's ``PYSPARK_PYTHON``, and a fresh interpreter there is the start
    that misses Spark's 10 s on a busy machine."""
    from samza_devkit.kafka_helpers import create_topic, produce, unique_topic

    if not fork_server.enabled():
        pytest.skip("the fork server is switched off (SAMZA_TEST_FORK_SERVER=0)")
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap, unique_topic("forked"), 1)
    produce(bootstrap, topic, [(b"k", b"v", None, 0)])
    query = (spark.readStream.format("samza-kafka")
             .options(**{"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "job.name": topic,
                         "metadata.store": f"file://{tmp_path}/meta", "startingOffsets": "earliest"})
             .load().writeStream.format("noop").option("checkpointLocation", str(tmp_path / "chk"))
             .trigger(processingTime="1 second").start())
    try:
        wait_until(lambda: query.lastProgress and query.lastProgress["numInputRows"] >= 0, 120, "a first batch",
                   seen=lambda: query.status)
        jvm = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
        started = _python_children(jvm)
    finally:
        query.stop()
    assert any("python_streaming_source_runner" in args for args in started), started
    fresh = [args for args in started if "python_fork_client.py" not in args]
    assert not fresh, f"the JVM started these as fresh interpreters: {fresh}"


def _python_children(pid: int) -> list[str]:
    children = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as stat:
                ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                args = cmdline.read().replace(b"\0", b" ").decode()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid and "python" in args:
            children.append(args)
    return children
