"""The development kit's servers (Apache Kafka, the KCL daemon) start as children that die with the test process,
and starting them leaves the test process's connection to Spark's JVM alone.

``Popen(preexec_fn=...)`` would run Python in the forked child, where the finalizer of Py4J's per-thread connection
shuts down the socket the parent shares: the parent's thread then talks to Spark through a new JVM thread on which
its SparkSession is not active, and ``spark.conf.set`` stops reaching what Spark reads through ``SQLConf.get``
(``explain()``'s option redaction: ``tests/integration/test_secrets.py``).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import pytest

from samza_devkit.child_process import popen_dying_with_this_process
from samza_devkit.waits import deadline_after


def _jvm_view(spark) -> tuple[int, bool, str]:
    """The JVM thread serving this Python thread, whether the session is active there, and the runtime SQL setting
    Spark reads through ``SQLConf.get`` on it."""
    jvm = spark._jvm
    active = jvm.org.apache.spark.sql.SparkSession.getActiveSession()
    conf = jvm.org.apache.spark.sql.internal.SQLConf.get()
    return (jvm.java.lang.Thread.currentThread().getId(),
            active.isDefined() and active.get().equals(spark._jsparkSession),
            conf.getConfString("spark.sql.redaction.options.regex"))


@pytest.mark.spark
def test_starting_a_child_from_another_thread_keeps_this_threads_spark_connection(spark):
    before = _jvm_view(spark)
    assert before[1]  # the fixture's session is active on the JVM thread serving this one
    started: list[subprocess.Popen] = []
    launcher = threading.Thread(target=lambda: started.append(popen_dying_with_this_process(["true"])))
    launcher.start()
    launcher.join()
    assert started[0].wait(60) == 0
    assert _jvm_view(spark) == before
    previous = spark.conf.get("spark.sql.redaction.options.regex")
    spark.conf.set("spark.sql.redaction.options.regex", "(?i)url|pem")
    try:
        assert _jvm_view(spark)[2] == "(?i)url|pem"  # what explain() reads is what the session was given
    finally:
        spark.conf.set("spark.sql.redaction.options.regex", previous)


def test_preexec_fn_is_refused():
    with pytest.raises(ValueError, match="preexec_fn"):
        popen_dying_with_this_process(["true"], preexec_fn=lambda: None)


def test_the_child_is_the_command_and_dies_with_its_parent(tmp_path):
    """A parent process starts ``sleep`` this way and is killed: the same pid runs ``sleep`` (exec, no wrapper
    left between), and it receives the signal."""
    parent = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import signal, sys, time
        from samza_devkit.child_process import popen_dying_with_this_process
        child = popen_dying_with_this_process(["sleep", "600"], signal.SIGKILL)
        print(child.pid, flush=True)
        time.sleep(600)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        child_pid = int(parent.stdout.readline())
        cmdline = f"/proc/{child_pid}/cmdline"
        deadline = deadline_after(30)
        while open(cmdline, "rb").read().split(b"\0")[0] != b"sleep" and time.monotonic() < deadline:
            time.sleep(0.05)  # the interpreter in between takes a moment to exec
        assert open(cmdline, "rb").read().split(b"\0")[:2] == [b"sleep", b"600"]
    finally:
        parent.kill()
        parent.wait()
    deadline = deadline_after(30)
    while _alive(child_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child_pid), "the child outlived its parent"


def _alive(pid: int) -> bool:
    """Running, not a zombie (init reaps the orphan, but not necessarily at once)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
