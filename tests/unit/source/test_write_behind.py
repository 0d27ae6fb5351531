"""The write-behind the Kafka coordinator hands its mirror writes to (``source/write_behind.py``): jobs run on
its thread in order, the newest replaces one still waiting, and ``settle`` waits for them and raises their error
once."""

from __future__ import annotations

import threading

import pytest

from spark_samza_source.source.write_behind import WriteBehind


def test_settle_waits_for_the_job_and_the_newest_waiting_job_replaces_older_ones():
    writer = WriteBehind("test-writer")
    release, started, ran = threading.Event(), threading.Event(), []

    def blocking():
        started.set()
        release.wait(10)
        ran.append("first")

    writer.submit(blocking)
    assert started.wait(10)
    writer.submit(lambda: ran.append("second"))  # waits while the first runs ...
    writer.submit(lambda: ran.append("third"))  # ... and is replaced by this one
    assert writer.settle(timeout_s=0.05) is False  # the first still runs
    release.set()
    assert writer.settle(timeout_s=10) is True
    assert ran == ["first", "third"]


def test_a_jobs_error_is_raised_by_the_next_settle_once_and_later_jobs_still_run():
    writer = WriteBehind("test-writer")
    ran = []

    def failing():
        raise OSError("store unreachable")

    writer.submit(failing)
    with pytest.raises(OSError, match="store unreachable"):
        writer.settle(timeout_s=10)
    writer.submit(lambda: ran.append("next"))
    assert writer.settle(timeout_s=10) is True and ran == ["next"]


def test_settle_without_any_job_returns_at_once():
    assert WriteBehind("test-writer").settle(timeout_s=0) is True
