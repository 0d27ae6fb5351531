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
