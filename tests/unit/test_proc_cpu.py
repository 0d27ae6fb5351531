"""The head-to-head benchmark's CPU count (samza_devkit.proc_cpu): a process that ends inside the measured window
must still be counted, which the earlier count (own + reaped children's CPU at two instants) got wrong for
Spark's Python workers (issue #49)."""

import os
import subprocess
import sys

from samza_devkit.proc_cpu import CpuSampler

BURN = "import time\nend = time.process_time() + {s}\nwhile time.process_time() < end: pass\n"


def test_a_child_that_burns_cpu_and_ends_is_counted_once_in_its_group():
    sampler = CpuSampler({"me": os.getpid()}, spark_group="me", hz=20)
    try:
        mark = sampler.mark()
        # the child is counted while it runs; its last value is kept after it has ended and been reaped
        subprocess.run([sys.executable, "-c", BURN.format(s=0.6)], check=True)
        used = sampler.since(mark)
    finally:
        sampler.close()
    # a Python child of the root goes to "<group>-python", the root itself to "<group>"; the lower bound leaves the
    # child's last sampling period (0.05 s) and its start-up out, the upper bound its start-up (imports) in
    assert 0.6 - 0.05 - 0.1 <= used.get("me-python", 0.0) <= 0.6 + 0.5
    assert "me" in used


def test_cpu_of_processes_that_ended_before_the_mark_is_not_counted_again():
    sampler = CpuSampler({"me": os.getpid()}, spark_group="me", hz=20)
    try:
        subprocess.run([sys.executable, "-c", BURN.format(s=0.3)], check=True)
        mark = sampler.mark()
        used = sampler.since(mark)
    finally:
        sampler.close()
    assert used.get("me-python", 0.0) == 0.0
