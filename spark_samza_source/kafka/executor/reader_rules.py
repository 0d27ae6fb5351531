"""The constants and error texts of the executor read's rules (read_control.py applies them for both read paths):
how much one consume call asks for, when a waiting partition is paused, which errors mean data loss, where a batch
is cut, the timestamp range Spark holds, and the words of the errors that name the task, the partition and the
range."""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import KafkaError

from ...options.common import FAIL_ON_DATA_LOSS
from .. import errors
from ..input_partition import KafkaRange

log = logging.getLogger("spark_samza_source.kafka.executor.reader")  # one logger for both paths' warnings

CONSUME_MAX = 10_000  # messages per consume() call
CONSUME_BYTES = 8 * 1024 * 1024  # ... and about this many value bytes, from the average message size seen
CONSUME_WAIT_S = 0.5  # longest single consume() wait; also how often the stall timeout is checked
OUT_OF_RANGE = {KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE}
GONE = {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC}
# The broker refuses this principal the read (an ACL), or its credentials or certificate: librdkafka retries these
# for ever, so without this rule a task waited for kafkaConsumer.pollTimeoutMs (120 s) per attempt
REFUSED = {KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED,
           KafkaError._SSL}
WAIT_BYTES_TOTAL = 64 * 1024 * 1024  # buffered value bytes of waiting partitions, shared among them
WAIT_BYTES_MIN = 8 * 1024 * 1024
MAX_REPOSITION = 5  # out-of-range errors at an offset the broker says exists (leader moving): retries
EXISTENCE_CHECK_S = 1.0  # no record for this long: check once that the pending partitions exist
# Spark's timestamp range (0001-01-01 to 9999-12-31 UTC) in milliseconds; a record's timestamp outside it is read
# as the nearest end (both paths clamp before converting to microseconds, which overflows int64 past ~292,000
# years) and the read warns, naming the records
SPARK_MIN_MS, SPARK_MAX_MS = -62_135_596_800_000, 253_402_300_799_999


def batch_cut(sizes: Mapping[str, pa.Array], fixed: Mapping[str, int], max_rows: int, max_bytes: int,
              limit: int) -> tuple[int, str, int]:
    """How many of the candidate records the next batch takes, from each record's bytes in each variable-width
    column (``sizes``: column -> int64 array, one value per candidate) and the bytes of the columns that repeat one
    value (``fixed``: topic, task): up to ``max_rows``; cut where the bytes of all columns reach ``max_bytes`` (the
    record reaching it included); never a record that would take one column past ``limit``.

    Returns ``(rows, column, bytes)``: 0 rows when the first record alone does not fit, ``column`` and ``bytes``
    then saying where (native_reader.c's batch_rows is the same rule in C)."""
    n = min(max_rows, len(next(iter(sizes.values()))))
    fits = n
    for column, per_record in sizes.items():
        per_record = per_record.slice(0, n)
        over = pc.greater(pc.cumulative_sum(per_record), limit)
        if pc.any(over).as_py():
            first = pc.index(over, True).as_py()
            if first == 0:
                return 0, column, per_record[0].as_py()
            fits = min(fits, first)
    for column, width in fixed.items():
        if width > limit:
            return 0, column, width
        if width:
            fits = min(fits, limit // width)
    total = functools.reduce(pc.add, (a.slice(0, fits) for a in sizes.values()))
    reached = pc.greater_equal(pc.cumulative_sum(total), max_bytes)
    if fits > 1 and pc.any(reached).as_py():
        return pc.index(reached, True).as_py() + 1, "", 0
    return fits, "", 0


def clamped_timestamps(task: str, label: str, offsets: list[int]) -> None:
    """Warn that the records at ``offsets`` of ``label`` had timestamps outside Spark's range (read clamped)."""
    shown = ", ".join(map(str, offsets[:10])) + (", ..." if len(offsets) > 10 else "")
    log.warning("task %r: %d record(s) of %s have a timestamp outside Spark's range (0001-01-01 to 9999-12-31 UTC), "
                "read as the nearest end of the range: offsets %s", task, len(offsets), label, shown)


def data_loss(task: str, label: str, rng: KafkaRange, lost_from: int, lost_to: int, why: str, fail: bool) -> None:
    """Records ``[lost_from, lost_to)`` of ``rng`` are gone: raise (``fail``) or warn, naming task, partition
    (``label``) and range."""
    if lost_to <= lost_from:
        return
    what = (
        f"data loss in task {task!r}: {label} offsets {lost_from}..{lost_to - 1} ({lost_to - lost_from} "
        f"records) of the planned range [{rng.start}, {rng.end}) are no longer available: {why}. "
        "They were deleted (retention, delete-records) or the topic was re-created after the batch was planned"
    )
    if fail:
        raise errors.read_data_loss(what)
    log.warning("%s; skipping them (%s=false).", what, FAIL_ON_DATA_LOSS.name)

