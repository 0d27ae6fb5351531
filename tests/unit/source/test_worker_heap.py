"""A reused Python worker's long-lived objects are frozen once its first read has ended (source/worker_heap.py).

Each case runs in an interpreter of its own: freezing is for the whole process, and this one is pytest's.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(body: str) -> str:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(body)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_the_first_read_run_to_its_end_freezes_what_the_process_holds_and_hands_every_batch_through():
    out = _run("""
        import gc
        from spark_samza_source.source.worker_heap import freezing_after_first_read
        batches = freezing_after_first_read(iter(["a", "b"]))
        first = next(batches)
        print(gc.get_freeze_count() == 0, first, list(batches), gc.get_freeze_count() > 1000)
    """)
    assert out == "True a ['b'] True"


def test_a_read_that_fails_freezes_nothing_and_the_next_read_to_its_end_does():
    out = _run("""
        import gc
        from spark_samza_source.source.worker_heap import freezing_after_first_read
        def failing():
            yield "a"
            raise OSError("broker gone")
        try:
            list(freezing_after_first_read(failing()))
        except OSError:
            pass
        after_failure = gc.get_freeze_count()
        list(freezing_after_first_read(iter(["b"])))
        print(after_failure, gc.get_freeze_count() > 1000)
    """)
    assert out == "0 True"


def test_once_frozen_later_reads_are_handed_back_as_they_are_and_collections_skip_the_frozen_objects():
    out = _run("""
        import gc
        from spark_samza_source.source.worker_heap import freezing_after_first_read
        import pyarrow  # a worker's modules: tens of thousands of tracked objects
        tracked_before = len(gc.get_objects())
        list(freezing_after_first_read(iter([1])))
        later = iter([2])
        print(tracked_before > 10000, freezing_after_first_read(later) is later, len(gc.get_objects()) < 1000)
    """)
    assert out == "True True True"
