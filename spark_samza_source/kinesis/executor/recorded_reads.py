"""A shard's read for one micro-batch, to the end the first attempt records: how a Kinesis batch gets a
deterministic end.

Called by the executors' ``read()`` (``task.py``: :func:`stream_and_record`; tools and tests:
:func:`read_and_record`). The first task attempt that reads a shard records the end it reached with
``put_if_absent`` (the record format and its store: ``kinesis/microbatch_ends.py``); every other attempt of that
batch (retry, speculative copy, replay) reads exactly to the recorded end; an attempt that already yielded rows
past it raises :class:`AttemptPassedRecordedEndError` (Spark discards a failed attempt's rows).
Why: docs/architecture.md §8.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import replace
from typing import Any

import pyarrow as pa

from .. import errors
from ..errors import AttemptPassedRecordedEndError
from ..microbatch_ends import BatchEnds
from ..positions import AFTER_SEQUENCE_NUMBER, ShardPosition
from .reader import ShardRead, ShardReadResult, ShardReadSettings
from .shard_reads import open_shard_reader

__all__ = ["read_and_record", "stream_and_record"]


def _after(later: ShardPosition, earlier: ShardPosition) -> bool:
    """Whether reading on from the end ``earlier`` can reach the end ``later`` (both ends a read reached)."""
    if earlier.type != AFTER_SEQUENCE_NUMBER:
        return False  # SHARD_END: nothing follows; the start itself: no row was read
    if later.is_shard_end:
        return True
    if later.type != AFTER_SEQUENCE_NUMBER:
        return False
    return later.sequence_order() > earlier.sequence_order()


def stream_and_record(ends: BatchEnds, batch: int, client: Any, read: ShardRead,
                      settings: ShardReadSettings) -> Generator[pa.RecordBatch, None, ShardReadResult]:
    """Yield one shard's rows for one batch as they are read, so that every attempt that succeeds yields the same.

    A generator (see the module doc for the protocol); its return value is the :class:`ShardReadResult` of the
    whole read (``end`` the recorded end, ``records`` the rows yielded; ``batches`` empty). ``read`` says
    which shard from where (its ``recorded_end`` is set here from the store); ``settings`` the task's read settings.
    Raises :class:`AttemptPassedRecordedEndError` when a concurrent attempt recorded an end before this one and this
    one had already yielded rows beyond it.
    """
    task, stream, shard_id, start = read.task, read.stream, read.shard_id, read.start
    recorded = ends.get(batch, shard_id)
    reading = open_shard_reader(client, replace(read, recorded_end=recorded), settings)
    yield from reading
    result = reading.result
    if recorded is not None:
        return result
    winner = ends.record(batch, shard_id, result.end, task=task, millis_behind_latest=_behind_at_end(result),
                         data_loss=tuple(result.lost))
    if winner == result.end:
        return result
    if result.records and not _after(winner, result.end):
        raise errors.attempt_passed_recorded_end(
            f"task {task!r}: another attempt of batch {batch} recorded the end {winner} for shard {shard_id} of "
            f"stream {stream!r} first, and this attempt had already read on to {result.end}", winner)
    resume = result.end if result.records else start
    rest = open_shard_reader(client, replace(read, start=resume, recorded_end=winner), settings)
    yield from rest
    rest.result.start = start
    rest.result.records += result.records
    return rest.result


def _behind_at_end(result: ShardReadResult) -> int | None:
    """How far behind the shard's tip the read ended: Kinesis' answer to its last GetRecords; 0 for a drained
    shard (nothing will follow, whatever a closed shard's last answer said)."""
    if result.end.is_shard_end:
        return 0
    return result.millis_behind_latest


def read_and_record(ends: BatchEnds, batch: int, client: Any, read: ShardRead,
                    settings: ShardReadSettings) -> ShardReadResult:
    """:func:`stream_and_record` for a caller that holds every row until the end is recorded: returns the result
    with its ``batches``, and when another attempt recorded an earlier end first, re-reads exactly to it (no row
    had been handed out, so no failure is needed)."""
    batches: list[pa.RecordBatch] = []
    reading = stream_and_record(ends, batch, client, read, settings)
    try:
        while True:
            batches.append(next(reading))
    except StopIteration as done:
        result = done.value
    except AttemptPassedRecordedEndError as passed:
        return open_shard_reader(client, replace(read, recorded_end=passed.winner), settings).run()
    result.batches = batches
    return result
