"""A reused Python worker's long-lived objects are frozen after the read that made them (source/worker_heap.py).

Each case runs in an interpreter of its own: freezing is for the whole process, and this one is pytest's.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

_PRELUDE = """
import gc
from spark_samza_source.source.worker_heap import FREEZE_ABOVE_TRACKED_OBJECTS, freezing_after_read
import pyarrow  # a worker's modules: tens of thousands of tracked objects
assert len(gc.get_objects()) > FREEZE_ABOVE_TRACKED_OBJECTS
"""


def _run(body: str) -> str:
    code = _PRELUDE + textwrap.dedent(body)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_a_read_run_to_its_end_freezes_what_the_process_holds_and_hands_every_batch_through():
    out = _run("""
        batches = freezing_after_read(iter(["a", "b"]))
        first = next(batches)
        print(gc.get_freeze_count() == 0, first, list(batches), gc.get_freeze_count() > FREEZE_ABOVE_TRACKED_OBJECTS,
              len(gc.get_objects()) < 1000)
    """)
    assert out == "True a ['b'] True True"


def test_a_read_that_fails_freezes_nothing_and_the_next_read_to_its_end_does():
    out = _run("""
        def failing():
            yield "a"
            raise OSError("broker gone")
        try:
            list(freezing_after_read(failing()))
        except OSError:
            pass
        after_failure = gc.get_freeze_count()
        list(freezing_after_read(iter(["b"])))
        print(after_failure, gc.get_freeze_count() > FREEZE_ABOVE_TRACKED_OBJECTS)
    """)
    assert out == "0 True"


def test_a_later_read_that_keeps_many_objects_freezes_them_and_one_that_keeps_few_freezes_nothing():
    out = _run("""
        cache = []  # what a consumer or client cache keeps between tasks
        list(freezing_after_read(iter([1])))
        first = gc.get_freeze_count()

        def read_keeping(count):
            cache.append([[i] for i in range(count)])  # lists: always tracked
            yield count

        list(freezing_after_read(read_keeping(10)))
        after_small = gc.get_freeze_count()
        list(freezing_after_read(read_keeping(FREEZE_ABOVE_TRACKED_OBJECTS + 5000)))
        print(after_small == first, gc.get_freeze_count() - first > FREEZE_ABOVE_TRACKED_OBJECTS)
    """)
    assert out == "True True"


def test_garbage_a_read_leaves_is_collected_not_frozen():
    out = _run("""
        list(freezing_after_read(iter([1])))
        first = gc.get_freeze_count()

        def read_leaving_cycles():
            for _ in range(FREEZE_ABOVE_TRACKED_OBJECTS * 2):  # unreachable reference cycles: only a collection frees
                node = {}
                node["self"] = node
            yield "done"

        list(freezing_after_read(read_leaving_cycles()))
        print(gc.get_freeze_count() == first, len(gc.get_objects()) < 1000)
    """)
    assert out == "True True"
