"""The decisions of the executor read, written once for both read paths: turn order, how much one fetch asks for,
when a partition is paused or resumed, when a range is finished by the consumer position, what an error or a gap
means (data loss, a retry, a deleted partition), the stall timeout and the words of every error.

Why one class over two back-ends: the Python path (reader.py, confluent-kafka messages and Arrow built in Python)
and the native path (native_reader.py, records kept and converted in C) must give identical batches; decision
logic written twice drifts as soon as a fix lands in one copy only. A back-end only moves records: it fetches and
routes them into per-range buffers (keeping ``[next, end)``, finishing a range whose end arrived), answers
questions about the log, and builds a batch. Ranges are addressed by their index in the task's range list.

Per fetch and per batch, never per record: the native path keeps its per-record loops in C.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Protocol

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import KafkaError

from .. import errors
from ..input_partition import KafkaRange
from ..options import POLL_TIMEOUT
from .read_settings import KafkaReadSettings
from .reader_rules import (
    CONSUME_BYTES,
    CONSUME_MAX,
    CONSUME_WAIT_S,
    EXISTENCE_CHECK_S,
    GONE,
    MAX_REPOSITION,
    OUT_OF_RANGE,
    REFUSED,
    SPARK_MAX_MS,
    SPARK_MIN_MS,
    WAIT_BYTES_MIN,
    WAIT_BYTES_TOTAL,
    clamped_timestamps,
    data_loss,
)

__all__ = ["ReadBackend", "RangeReadControl", "FATAL", "ERROR_EVENT", "GAP_EVENT"]

log = logging.getLogger("spark_samza_source.kafka.executor.reader")  # one logger for both paths

FATAL = KafkaError._FATAL  # the code a back-end reports for an error that ends the consumer
ERROR_EVENT, GAP_EVENT = "error", "gap"
_PARTITION_EOF = KafkaError._PARTITION_EOF
_QUERY_TIMEOUT_MAX_S = 30.0  # longest wait for a broker answer (watermarks, metadata) within the poll timeout
_UNKNOWN_OFFSET_RETRY_S = 0.1  # first pause before asking again for offsets librdkafka does not know yet
_OFFSET, _TIMESTAMP = 4, 5  # column indexes in kafka_arrow_schema
_SPARK_MIN_US, _SPARK_MAX_US = SPARK_MIN_MS * 1000, SPARK_MAX_MS * 1000


class ReadBackend(Protocol):
    """What a read path does for :class:`RangeReadControl`; ``i`` is a range's index.

    ``fetch`` returns ``(messages consumed, value bytes kept, whether a live range took records, events)``; an
    event is ``("error", i or -1, code, text)`` (code :data:`FATAL` when the consumer is dead; partition EOF never
    reported) or ``("gap", i, first offset received, next offset expected)`` for a range's first record above its
    start, in consumption order. ``query_errors`` are what ``watermarks`` / ``partition_exists`` raise when the
    broker cannot answer."""

    query_errors: tuple[type[BaseException], ...]

    def start(self) -> None: ...  # assign every range at its start, none paused
    def stop(self) -> None: ...  # the read ended (normally or not)
    def state(self, i: int) -> tuple[int, int, int, bool, bool]: ...  # next, rows, value bytes, done, paused
    def fetch(self, want: int, wait_ms: int) -> tuple[int, int, bool, list[tuple]]: ...
    def pause(self, i: int, pause: bool) -> None: ...
    def finish(self, i: int) -> None: ...  # nothing more to fetch (paused); buffered rows stay
    def set_next(self, i: int, offset: int) -> None: ...
    def reposition(self, i: int, offset: int) -> None: ...  # fetch again from offset, pause state kept
    def positions(self, indexes: list[int]) -> list[int]: ...
    def watermarks(self, i: int, timeout_ms: int) -> tuple[int, int]: ...
    def partition_exists(self, i: int, timeout_ms: int) -> bool: ...
    # the rows the next batch of i takes (reader_rules.batch_cut), the first buffered record's offset, and where
    # the first record does not fit when rows is 0
    def cut(self, i: int, max_rows: int, max_bytes: int, limit: int) -> tuple[int, int, str, int]: ...
    def emit(self, i: int, rows: int) -> pa.RecordBatch: ...  # timestamps clamped to Spark's range


class RangeReadControl:
    """One task's read of ``ranges`` through ``backend``: round robin over the ranges in order, one batch per
    turn, so the output depends only on the records (module doc of reader.py)."""

    def __init__(self, backend: ReadBackend, task: str, ranges: Sequence[KafkaRange],
                 settings: KafkaReadSettings) -> None:
        self.b = backend
        self.task = task
        self.ranges = list(ranges)
        self.labels = [f"{r.topic}[{r.partition}]" for r in self.ranges]
        self.fail_on_data_loss = settings.fail_on_data_loss
        self.max_rows = settings.max_rows_per_batch
        self.max_bytes = settings.max_bytes_per_batch
        self.max_column_bytes = settings.max_column_bytes
        self.poll_timeout_s = settings.poll_timeout_ms / 1000.0
        self.query_timeout_ms = int(min(_QUERY_TIMEOUT_MAX_S, self.poll_timeout_s) * 1000)
        # Buffer bound of a range waiting for its turn, beyond which its fetching is paused.  Balanced ranges stay
        # well below it (each turn takes one batch from each); pausing drops librdkafka's prefetched data, so it
        # is kept for real imbalance.
        self.wait_rows = 3 * self.max_rows
        self.wait_bytes = max(WAIT_BYTES_MIN, WAIT_BYTES_TOTAL // len(self.ranges))
        self.repositions = [0] * len(self.ranges)
        self.last_progress = time.monotonic()
        self.last_error: str | None = None
        self.existence_checked = False
        self.seen_msgs = 0
        self.seen_bytes = 0

    # ---- main loop ----------------------------------------------------------------------------------------
    def run(self) -> Iterator[pa.RecordBatch]:
        """All batches of the task; the back-end is told when the read ends, however it ends."""
        self.b.start()
        try:
            yield from self._turns()
        finally:
            self.b.stop()

    def _turns(self) -> Iterator[pa.RecordBatch]:
        """Round robin: a range's turn fetches until it has a full batch (or is done), then emits one batch."""
        state = self.b.state
        turns = deque(range(len(self.ranges)))
        while turns:
            cur = turns.popleft()
            while True:
                _, rows, vbytes, done, paused = state(cur)
                if done or (rows and (rows >= self.max_rows or vbytes >= self.max_bytes)):
                    break
                if paused:
                    self._resume(cur)
                self._fetch(cur)
            if rows:
                yield self._emit(cur)
                _, rows, _, done, _ = state(cur)
            if not done or rows:
                turns.append(cur)

    def _want(self) -> int:
        """Messages one fetch asks for: what the fetching ranges still lack, bounded by count and by bytes
        (10,000 messages of 100 KiB would be a gigabyte at once)."""
        state = self.b.state
        lacking = 0
        for i, rng in enumerate(self.ranges):
            nxt, _, _, done, paused = state(i)
            if not done and not paused:
                lacking += rng.end - nxt
        want = min(CONSUME_MAX, max(1, lacking))
        if self.seen_msgs:
            avg = max(1, self.seen_bytes // self.seen_msgs)
            want = max(1, min(want, CONSUME_BYTES // avg))
        return want

    def _fetch(self, cur: int) -> None:
        """One fetch: then its errors and gaps, pausing the ranges that wait, ranges ending in a gap, stalls."""
        want = self._want()
        count, kept, progressed, events = self.b.fetch(want, int(CONSUME_WAIT_S * 1000))
        self.seen_msgs += count
        self.seen_bytes += kept
        for kind, i, *details in events:
            if kind == ERROR_EVENT:
                code, text = details
                self._on_error(i, code, text)
            else:
                first, nxt = details
                self._check_start_gap(i, nxt, first)
        if progressed:
            self.last_progress = time.monotonic()
        self._pause_waiting(cur)
        if count < want:
            self._check_positions()
        waited = time.monotonic() - self.last_progress
        if waited > EXISTENCE_CHECK_S and not self.existence_checked:
            self._check_existence()
        if waited > self.poll_timeout_s:
            self._stalled()

    def _pause_waiting(self, cur: int) -> None:
        """Pause the fetching of ranges (other than ``cur``) whose buffer grew past the waiting bound."""
        b = self.b
        for i in range(len(self.ranges)):
            if i != cur:
                _, rows, vbytes, done, paused = b.state(i)
                if not done and not paused and (rows >= self.wait_rows or vbytes >= self.wait_bytes):
                    b.pause(i, True)

    def _resume(self, i: int) -> None:
        self.b.pause(i, False)
        self.last_progress = time.monotonic()

    def _check_positions(self) -> None:
        """Finish ranges whose consumer position passed ``end`` without a record (the range ends in a gap)."""
        open_ = [i for i in range(len(self.ranges)) if not any(self.b.state(i)[3:])]
        if not open_:
            return
        for i, offset in zip(open_, self.b.positions(open_), strict=True):
            if offset >= self.ranges[i].end:
                self.b.finish(i)
                self.last_progress = time.monotonic()

    # ---- errors and data loss -----------------------------------------------------------------------------
    def _on_error(self, i: int, code: int, text: str) -> None:
        """Fatal: fail. Out of range / partition gone on a live range: decide on data loss. Else librdkafka
        retries by itself; the text is kept for the stall error."""
        if code == FATAL:
            raise errors.consumer_failed(self.task, text)
        if code == KafkaError.TOPIC_AUTHORIZATION_FAILED:
            raise errors.topic_read_not_authorized(self.task, self.labels[i] if i >= 0 else "its topics", text)
        if code in REFUSED:
            raise errors.consumer_failed(self.task, text)
        live = i >= 0 and not self.b.state(i)[3]
        if live and code in OUT_OF_RANGE:
            self._out_of_range(i)
        elif live and code in GONE:
            self._maybe_gone(i, text)
        elif code != _PARTITION_EOF:
            self.last_error = text
            log.debug("Kafka consumer error in task %r (librdkafka retries): %s", self.task, text)

    def _watermarks(self, i: int) -> tuple[int, int]:
        """(log start, log end) of range ``i``, as the broker answers them now.

        librdkafka answers -1001 (its "offset not known") without an error while a partition's leader is being
        elected or the metadata still names a leader that died: taken as a log end, that reads as the whole rest
        of the range truncated (a false data-loss error, or with failOnDataLoss=false records skipped). Asked
        again until both offsets are known, within the query timeout; then the read fails naming the answer."""
        deadline = time.monotonic() + self.query_timeout_ms / 1000.0
        pause = _UNKNOWN_OFFSET_RETRY_S
        while True:
            try:
                low, high = self.b.watermarks(i, self.query_timeout_ms)
            except self.b.query_errors as err:
                raise errors.watermarks_unavailable(self.task, self.labels[i], err) from None
            if low >= 0 and high >= 0:
                return low, high
            if time.monotonic() + pause > deadline:
                raise errors.watermarks_unavailable(
                    self.task, self.labels[i], f"the broker answered no offsets (log start {low}, end {high}) "
                                               f"for {self.query_timeout_ms / 1000:.0f} s")
            time.sleep(pause)
            pause = min(2 * pause, 1.0)

    def _out_of_range(self, i: int) -> None:
        """Below the log start or at/after its end: data loss (the rest of the range or up to the new start).
        Inside the log: the leader moved; fetch again, a bounded number of times."""
        rng, nxt = self.ranges[i], self.b.state(i)[0]
        low, high = self._watermarks(i)
        if nxt < low:
            self._data_loss(i, nxt, min(low, rng.end), f"the log now starts at offset {low}")
            if low >= rng.end:
                self.b.finish(i)
            else:
                self.b.set_next(i, low)
                self.b.reposition(i, low)
        elif nxt >= high:
            self._data_loss(i, nxt, rng.end, f"the log now ends at offset {high} (topic re-created or truncated?)")
            self.b.finish(i)
        else:
            self.repositions[i] += 1
            if self.repositions[i] > MAX_REPOSITION:
                raise errors.out_of_range_repeated(self.task, self.labels[i], nxt, low, high)
            self.b.reposition(i, nxt)
        self.last_progress = time.monotonic()

    def _check_start_gap(self, i: int, nxt: int, first: int) -> None:
        """First record above the range start: data loss only if the log start moved past ``next`` meanwhile
        (else the gap is compaction or transaction markers)."""
        low, _ = self._watermarks(i)
        if low > nxt:
            self._data_loss(i, nxt, min(low, first, self.ranges[i].end), f"the log now starts at offset {low}")

    def _maybe_gone(self, i: int, text: str) -> None:
        """Unknown partition: data loss if the metadata confirms it is gone, else a transient error to retry."""
        try:
            exists = self.b.partition_exists(i, self.query_timeout_ms)
        except self.b.query_errors:  # cannot tell: let librdkafka retry, the stall timeout bounds it
            exists = True
        if exists:
            self.last_error = text
            return
        self._data_loss(i, self.b.state(i)[0], self.ranges[i].end, "the partition no longer exists (topic deleted?)")
        self.b.finish(i)
        self.last_progress = time.monotonic()

    def _check_existence(self) -> None:
        """Once per read, when no record came for a while: a pending range whose partition does not exist (topic
        deleted, or never holding it) is data loss said as such, not a stall blamed on the network (librdkafka
        reports nothing for a partition it cannot find: it waits for it to appear)."""
        self.existence_checked = True
        for i in range(len(self.ranges)):
            if self.b.state(i)[3]:
                continue
            try:
                exists = self.b.partition_exists(i, self.query_timeout_ms)
            except self.b.query_errors:  # cannot tell now: the stall timeout decides
                return
            if not exists:
                rng = self.ranges[i]
                self._data_loss(i, self.b.state(i)[0], rng.end,
                                f"topic {rng.topic!r} has no partition {rng.partition} (the topic does not exist, "
                                "was deleted, or has fewer partitions)")
                self.b.finish(i)
                self.last_progress = time.monotonic()

    def _data_loss(self, i: int, lost_from: int, lost_to: int, why: str) -> None:
        data_loss(self.task, self.labels[i], self.ranges[i], lost_from, lost_to, why, self.fail_on_data_loss)

    def _stalled(self) -> None:
        if not self.existence_checked:
            self._check_existence()
            if all(self.b.state(i)[3] for i in range(len(self.ranges))):
                return
        pending = []
        for i, rng in enumerate(self.ranges):
            nxt, _, _, done, _ = self.b.state(i)
            if not done:
                pending.append(f"{self.labels[i]} at offset {nxt} of [{rng.start}, {rng.end})")
        raise errors.poll_timed_out(self.task, self.poll_timeout_s, pending, self.last_error,
                                    poll_timeout_option=POLL_TIMEOUT.name)

    # ---- batches ------------------------------------------------------------------------------------------
    def _emit(self, i: int) -> pa.RecordBatch:
        """The next batch of range ``i``; a paused range drained below half its waiting bound is resumed, so its
        next batch is prefetched while the other ranges take their turn."""
        rows, offset, column, size = self.b.cut(i, self.max_rows, self.max_bytes, self.max_column_bytes)
        if rows == 0:
            raise errors.record_too_large(self.task, self.labels[i], offset, column, size, self.max_column_bytes)
        batch = self.b.emit(i, rows)
        self._check_timestamps(i, batch)
        _, rows, vbytes, done, paused = self.b.state(i)
        if paused and not done and rows < self.max_rows and vbytes < self.wait_bytes // 2:
            self._resume(i)
        self.last_progress = time.monotonic()
        return batch

    def _check_timestamps(self, i: int, batch: pa.RecordBatch) -> None:
        """Warn, naming the records, when a batch holds timestamps at the ends of Spark's range (both back-ends
        clamp the ones outside it)."""
        stamps = batch.column(_TIMESTAMP).view(pa.int64())
        low, high = pc.min_max(stamps).values()
        if low.as_py() is None or _SPARK_MIN_US < low.as_py() <= high.as_py() < _SPARK_MAX_US:
            return
        at_ends = pc.or_(pc.less_equal(stamps, _SPARK_MIN_US), pc.greater_equal(stamps, _SPARK_MAX_US))
        clamped_timestamps(self.task, self.labels[i], batch.column(_OFFSET).filter(at_ends).to_pylist())
