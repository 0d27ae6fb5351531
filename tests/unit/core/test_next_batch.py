"""Where the next batch starts when Spark does not say (``core/next_batch.py``, PySpark 4.0 / 4.1), over the call
sequences those versions' engine makes (read in their ``MicroBatchExecution`` and ``PythonMicroBatchStream``, and
seen from a logging source on 4.0.5): a new checkpoint, a restart after a committed batch, a restart that runs an
uncommitted batch again (batch 0 among them), held-back plans, and a plan made before Spark said where its
checkpoint stands."""

from __future__ import annotations

import pytest

from spark_samza_source.core.errors import StartUnknownError
from spark_samza_source.core.next_batch import AVAILABLE_NOW_WRAPPER, NextBatchStart, canonical


def off(n: int, **extra) -> dict:
    return {"p": n, **extra}


def test_a_new_checkpoint_knows_no_start_until_its_first_plan():
    tracker = NextBatchStart()
    assert tracker.start is None
    tracker.planned(off(0), off(10), from_initial=True)  # latestOffset() before initialOffset()
    assert tracker.start == off(10)
    tracker.spark_ran(off(0), off(10), source="samza-kafka")  # initialOffset() returned the same start
    tracker.planned(off(10), off(20))
    assert tracker.start == off(20)


def test_a_plan_spark_holds_back_keeps_the_start():
    tracker = NextBatchStart()
    tracker.spark_ran(off(5), off(5), source="samza-kafka")
    tracker.planned(off(5), off(5))  # nothing new: the same offset, Spark logs no batch
    assert tracker.start == off(5)


def test_a_restart_after_a_committed_batch_starts_at_the_newest_logged_end():
    tracker = NextBatchStart()  # a new runner process: nothing remembered
    tracker.spark_ran(off(30), off(30), source="samza-kafka")  # setLatestSeenOffset(offsets/N)
    assert tracker.start == off(30)


def test_a_restart_that_runs_an_uncommitted_batch_again_continues_after_it():
    tracker = NextBatchStart()
    tracker.spark_ran(off(30), off(30), source="samza-kafka")  # setLatestSeenOffset(offsets/N)
    tracker.spark_ran(off(20), off(30), source="samza-kafka")  # batch N again, its logged ends
    assert tracker.start == off(30)
    tracker.planned(off(30), off(40))
    assert tracker.start == off(40)


def test_batch_0_run_again_takes_its_start_from_spark_not_from_an_earlier_plan():
    tracker = NextBatchStart()
    tracker.spark_ran(off(10), off(10), source="samza-kafka")  # offsets/0 logged, never committed
    tracker.spark_ran(off(0, fresh="again"), off(10), source="samza-kafka")  # initialOffset() computed afresh
    assert tracker.start == off(10)


def test_a_new_checkpoint_with_nothing_to_read_runs_an_empty_batch_0():
    tracker = NextBatchStart()
    tracker.planned(off(0), off(0), from_initial=True)
    tracker.spark_ran(off(0), off(0), source="samza-kafka")  # Spark has no start yet: batch 0 runs empty
    assert tracker.start == off(0)


def test_a_plan_made_before_spark_named_its_checkpoint_fails_naming_the_setting():
    tracker = NextBatchStart()
    tracker.planned(off(0), off(10), from_initial=True)  # the AvailableNow wrapper asks first ...
    with pytest.raises(StartUnknownError) as err:
        tracker.spark_ran(off(30), off(30), source="samza-kinesis")  # ... then Spark names its checkpoint
    message = str(err.value)
    assert "samza-kinesis" in message and AVAILABLE_NOW_WRAPPER in message and "4.2" in message


def test_offsets_compare_as_canonical_text():
    assert canonical({"b": 1, "a": {"y": 2, "x": 1}}) == canonical({"a": {"x": 1, "y": 2}, "b": 1})
    assert canonical({"a": 1}) != canonical({"a": "1"})
    tracker = NextBatchStart()
    tracker.planned({"b": 1, "a": 0}, {"b": 2, "a": 0}, from_initial=True)
    tracker.spark_ran({"a": 0, "b": 1}, {"a": 0, "b": 2}, source="samza-kafka")  # same offset, other key order
    assert tracker.start == {"a": 0, "b": 2}
