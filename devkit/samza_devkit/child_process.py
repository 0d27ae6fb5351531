"""Child processes that die with the test process, started without running any Python between fork and exec.

``subprocess.Popen(preexec_fn=...)`` runs Python in the forked child, and before that CPython's after-fork hook
drops the state of every thread but the forking one, finalizing their thread-local objects. Py4J keeps each Python
thread's connection to Spark's JVM in a thread-local; its finalizer closes the connection with ``shutdown()``,
which ends the TCP connection the parent shares, not just the child's copy of the descriptor. The parent's next
call from that thread opens a new connection, served by a new JVM thread on which no SparkSession is active:
``SQLConf.get`` there is a default configuration, so settings made with ``spark.conf.set`` on the session stop
reaching what Spark reads through it (the option redaction of ``explain()``, for one), and the thread's local
properties are gone.

So the request to be signalled when the parent dies (Linux ``PR_SET_PDEATHSIG``) is made by a fresh interpreter
which then ``exec``\\ s the command: same process id, and the request survives ``exec``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence

__all__ = ["popen_dying_with_this_process"]

# argv: signal number, the parent's pid, then the command. The parent may have died before prctl took effect:
# then this child is already an orphan and nothing would ever signal it, so it does not start the command.
_EXEC_WITH_PDEATHSIG = (
    "import ctypes, os, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, int(sys.argv[1]))\n"  # 1 = PR_SET_PDEATHSIG
    "if os.getppid() != int(sys.argv[2]):\n"
    "    os._exit(1)\n"
    "os.execvp(sys.argv[3], sys.argv[3:])\n"
)


def popen_dying_with_this_process(cmd: Sequence[str], sig: int = signal.SIGKILL, **popen_kwargs) -> subprocess.Popen:
    """``subprocess.Popen(cmd, **popen_kwargs)`` whose process receives ``sig`` when the thread that started it
    ends (Linux; elsewhere a plain ``Popen``). Start it from a thread that lives as long as the child should."""
    if "preexec_fn" in popen_kwargs:
        raise ValueError("preexec_fn runs Python in the forked child, which breaks this process's Py4J connections")
    if sys.platform.startswith("linux"):
        cmd = [sys.executable, "-I", "-S", "-c", _EXEC_WITH_PDEATHSIG, str(int(sig)), str(os.getpid()), *cmd]
    return subprocess.Popen(list(cmd), **popen_kwargs)
