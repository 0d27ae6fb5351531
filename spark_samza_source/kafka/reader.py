"""Executor side of ``samza-kafka``: read a task's offset ranges and stream them out as Arrow RecordBatches.

``read_ranges`` is what ``DataSourceStreamReader.read(partition)`` returns for one Spark input partition (one
Samza task). One consumer per task, borrowed from :mod:`consumer_cache`, every range assigned at once. Output is
deterministic (round robin over partitions, each in offset order, batches cut by a rule that depends only on the
records), never past a range's end, never duplicated. Data loss is detected (``auto.offset.reset=error``) and
fails with :class:`KafkaDataLossError` unless ``failOnDataLoss`` is off; no progress for ``poll_timeout_ms`` fails
the task naming what is pending. Batches are built column by column with exactly :func:`kafka_arrow_schema`.

Two paths follow these rules: the native reader (native_reader.py: per-record work in C over librdkafka), used
where it is built, and the Python reader below (confluent-kafka), the fallback; option ``readPath`` chooses.

The read protocol and the reasons for these choices: docs/architecture.md §7.
"""

from __future__ import annotations

import functools
import logging
import operator
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from itertools import chain

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import Consumer, KafkaError, Message, TopicPartition

from .consumer_cache import ConsumerCache, default_cache
from .errors import KafkaSourceError
from .input_partition import KafkaRange
from .native_reader import NativeRangeReader, choose_read_path
from .options import DEFAULT_MAX_ROWS_PER_BATCH, DEFAULT_POLL_TIMEOUT_MS
from .read_settings import DEFAULT_MAX_BYTES_PER_BATCH, KafkaReadSettings
from .reader_rules import (
    CONSUME_BYTES,
    CONSUME_MAX,
    CONSUME_WAIT_S,
    GONE,
    MAX_REPOSITION,
    OUT_OF_RANGE,
    WAIT_BYTES_MIN,
    WAIT_BYTES_TOTAL,
    data_loss,
    stalled_error,
)
from .schema import kafka_arrow_schema

__all__ = ["read_ranges", "KafkaReadSettings", "DEFAULT_MAX_ROWS_PER_BATCH", "DEFAULT_MAX_BYTES_PER_BATCH",
           "DEFAULT_POLL_TIMEOUT_MS"]

log = logging.getLogger(__name__)

# Unbound accessors, mapped over a whole list of messages (see _route and _batch)
_PARTITION, _TOPIC, _ERROR, _OFFSET = Message.partition, Message.topic, Message.error, Message.offset
_KEY, _VALUE, _TIMESTAMP, _HEADERS = Message.key, Message.value, Message.timestamp, Message.headers
_IS_SET = functools.partial(operator.is_not, None)


class _Partition:
    """Read state of one range: next expected offset, buffered messages, fetch state."""

    __slots__ = ("rng", "tp", "next", "buf", "vbytes", "done", "paused", "seen", "repositions")

    def __init__(self, rng: KafkaRange) -> None:
        self.rng = rng
        self.tp = TopicPartition(rng.topic, rng.partition)
        self.next = rng.start
        self.buf: list = []  # confluent_kafka.Message, offsets next-len(buf) .. next-1 (with gaps)
        self.vbytes = 0  # value bytes in buf (pause heuristic only; batch cuts use key+value bytes)
        self.done = False  # nothing more to fetch (buf may still hold rows)
        self.paused = False
        self.seen = False  # a record of this range has been received
        self.repositions = 0

    def __str__(self) -> str:
        return f"{self.rng.topic}[{self.rng.partition}]"


def read_ranges(
    client_conf: Mapping[str, str],
    task: str,
    ranges: Sequence[KafkaRange],
    settings: KafkaReadSettings | None = None,
    *,
    cache: ConsumerCache | None = None,
    **fields,
) -> Iterator[pa.RecordBatch]:
    """Yield the records of ``ranges`` as RecordBatches with schema ``kafka_arrow_schema(include_headers)``.

    ``settings`` (or its fields as keywords) say what to read and how; ``settings.read_path`` picks the native
    or the Python reader (native_reader.py), which give identical batches. ``task`` fills the ``task`` column.
    Empty ranges are skipped (no consumer is borrowed when all are empty). A generator: nothing happens before
    the first ``next()``; closing it early returns the consumer to the cache. A ``cache`` given holds the
    consumers of one path (``ConsumerCache.native``: the native one); with ``read_path='auto'`` it decides.
    """
    if settings is None:
        settings = KafkaReadSettings(**fields)
    elif fields:
        raise TypeError(f"read_ranges takes settings or its fields, not both ({', '.join(fields)})")
    seen_tps: set[tuple[str, int]] = set()
    for r in ranges:
        if (r.topic, r.partition) in seen_tps:
            raise ValueError(f"partition {r.topic}[{r.partition}] appears twice in the ranges of task {task!r}")
        seen_tps.add((r.topic, r.partition))
    work = [r for r in ranges if r.size > 0]
    if not work:
        return
    native = choose_read_path(settings, client_conf) == "native"
    if cache is not None and cache.is_native != native:
        if settings.read_path != "auto":
            raise ValueError(f"read_ranges: the {settings.read_path} read path needs a cache of its consumers "
                             f"({'ConsumerCache.native' if native else 'ConsumerCache'})")
        native = cache.is_native  # auto with a caller's cache: the path whose consumers it holds
    pool = cache if cache is not None else default_cache(native=native)
    with pool.borrow(client_conf) as consumer:
        if native:
            reader = NativeRangeReader(consumer, task, work, settings)
        else:
            reader = _RangeReader(consumer, task, work, settings.include_headers, settings.fail_on_data_loss,
                                  settings.max_rows_per_batch, settings.max_bytes_per_batch,
                                  settings.poll_timeout_ms)
        yield from reader.run()


class _RangeReader:
    def __init__(self, consumer: Consumer, task: str, ranges: list[KafkaRange], include_headers: bool,
                 fail_on_data_loss: bool, max_rows: int, max_bytes: int, poll_timeout_ms: int) -> None:
        self.consumer = consumer
        self.task = task
        self.include_headers = include_headers
        self.fail_on_data_loss = fail_on_data_loss
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self.poll_timeout_s = poll_timeout_ms / 1000.0
        self.schema = kafka_arrow_schema(include_headers)
        self.order = [_Partition(r) for r in ranges]
        self.by_tp = {(p.rng.topic, p.rng.partition): p for p in self.order}
        self.single_topic = len({p.rng.topic for p in self.order}) == 1
        # Buffer bound of a partition waiting for its turn, beyond which its fetching is paused.  Balanced
        # partitions stay well below it (each turn takes one batch from each); pausing drops librdkafka's
        # prefetched data, so it is kept for real imbalance.
        self.wait_rows = 3 * max_rows
        self.wait_bytes = max(WAIT_BYTES_MIN, WAIT_BYTES_TOTAL // len(self.order))
        self.last_progress = time.monotonic()
        self.last_error: str | None = None
        self.seen_msgs = 0
        self.seen_bytes = 0

    # ---- main loop ----------------------------------------------------------------------------------------
    def run(self) -> Iterator[pa.RecordBatch]:
        """Round robin over the partitions in range order, one batch per turn (deterministic, see module doc)."""
        self.consumer.assign([TopicPartition(p.rng.topic, p.rng.partition, p.rng.start) for p in self.order])
        self.consumer.resume([p.tp for p in self.order])  # a reused consumer may carry a stale pause flag
        turns = deque(self.order)
        while turns:
            cur = turns.popleft()
            while not (cur.done or self._chunk_ready(cur)):
                if cur.paused:
                    self._resume(cur)
                self._fetch(cur)
            if cur.buf:
                yield self._emit(cur)
            if not cur.done or cur.buf:
                turns.append(cur)

    def _chunk_ready(self, p: _Partition) -> bool:
        return bool(p.buf) and (len(p.buf) >= self.max_rows or p.vbytes >= self.max_bytes)

    def _fetch(self, cur: _Partition) -> None:
        """One ``consume()`` call: route messages, finish / pause partitions, check for stalls."""
        fetching = [p for p in self.order if not p.done and not p.paused]
        want = min(CONSUME_MAX, max(1, sum(p.rng.end - p.next for p in fetching)))
        if self.seen_msgs:
            # Bound one call's memory by bytes too: 10,000 messages of 100 KiB would be a gigabyte at once.
            avg = max(1, self.seen_bytes // self.seen_msgs)
            want = max(1, min(want, CONSUME_BYTES // avg))
        msgs = self.consumer.consume(want, CONSUME_WAIT_S)
        if msgs:
            before = sum(p.vbytes for p in self.order)
            self._route(msgs)
            self.seen_msgs += len(msgs)
            self.seen_bytes += max(0, sum(p.vbytes for p in self.order) - before)
        for p in self.order:
            if p is not cur and not p.done and not p.paused and (
                len(p.buf) >= self.wait_rows or p.vbytes >= self.wait_bytes
            ):
                self._pause(p)
        if len(msgs) < want:
            self._check_positions()
        if time.monotonic() - self.last_progress > self.poll_timeout_s:
            self._stalled()

    def _route(self, msgs: list) -> None:
        """Hand consumed messages to their partitions, a run of consecutive same-partition messages at a time
        (librdkafka delivers a fetch response's records together), so the usual case costs a slice copy.

        Per-message accessors run through ``map`` (C iteration, no Python frame per record): the partition and
        error of every message are read once, and runs are found on those lists."""
        by_tp = self.by_tp
        n = len(msgs)
        errors = list(map(_ERROR, msgs))
        if not any(map(_IS_SET, errors)):  # (not errors.count(None): KafkaError == None raises)
            parts = list(map(_PARTITION, msgs))
            topics = None if self.single_topic else list(map(_TOPIC, msgs))
        else:  # an error message's partition may be unset (and reading it raises): only read the others'
            parts = [None if e is not None else m.partition() for m, e in zip(msgs, errors, strict=True)]
            topics = None if self.single_topic else [
                None if e is not None else m.topic() for m, e in zip(msgs, errors, strict=True)]
        if topics is None and parts.count(parts[0]) == n and parts[0] is not None:
            runs = [(0, n)]  # the usual case: one partition's records, no error
        else:
            runs = _runs(parts, errors, topics)
        progressed = False
        for i, j in runs:
            if errors[i] is not None:
                self._on_error(msgs[i])
                continue
            m = msgs[i]
            p = by_tp.get((m.topic(), parts[i]))
            if p is not None and not p.done:
                self._take(p, msgs, i, j)
                progressed = True
        if progressed:
            self.last_progress = time.monotonic()

    def _take(self, p: _Partition, msgs: list, i: int, j: int) -> None:
        """Append ``msgs[i:j]`` (records of ``p``, offsets ascending) within ``[next, end)``; finish ``p`` at end."""
        first, last = msgs[i].offset(), msgs[j - 1].offset()
        if last < p.next:  # all refetched after a pause / reposition
            return
        if first > p.next and not p.seen:
            self._check_start_gap(p, first)
        p.seen = True
        end = p.rng.end
        if first >= p.next and last < end:  # the usual case: the whole run is new and inside the range
            run = msgs[i:j]
        else:
            run = [m for m in msgs[i:j] if p.next <= m.offset() < end]
        if run:
            p.buf.extend(run)
            p.vbytes += sum(map(len, run))
            p.next = run[-1].offset() + 1
        if last >= end - 1:
            p.next = max(p.next, min(last + 1, end))
            self._finish(p)

    # ---- partition state ----------------------------------------------------------------------------------
    def _finish(self, p: _Partition) -> None:
        p.done = True
        if not p.paused:
            self._pause(p)

    def _pause(self, p: _Partition) -> None:
        self.consumer.pause([p.tp])
        p.paused = True

    def _resume(self, p: _Partition) -> None:
        self.consumer.resume([p.tp])
        p.paused = False
        self.last_progress = time.monotonic()

    def _check_positions(self) -> None:
        """Finish partitions whose consumer position passed ``end`` without a record (the range ends in a gap)."""
        open_ = [p for p in self.order if not p.done and not p.paused]
        if not open_:
            return
        for p, tp in zip(open_, self.consumer.position([p.tp for p in open_]), strict=True):
            if tp.offset >= p.rng.end:
                self._finish(p)
                self.last_progress = time.monotonic()

    def _reposition(self, p: _Partition, offset: int) -> None:
        """Restart fetching ``p`` at ``offset`` (``seek`` is refused once librdkafka reported out-of-range)."""
        self.consumer.incremental_unassign([p.tp])
        self.consumer.incremental_assign([TopicPartition(p.rng.topic, p.rng.partition, offset)])
        if p.paused:
            self.consumer.pause([p.tp])

    # ---- errors and data loss -----------------------------------------------------------------------------
    def _on_error(self, m) -> None:
        err: KafkaError = m.error()
        code = err.code()
        p = self.by_tp.get((m.topic(), m.partition())) if m.topic() is not None else None
        if err.fatal():
            raise KafkaSourceError(f"Kafka consumer failed in task {self.task!r}: {err.str()}")
        if p is not None and not p.done and code in OUT_OF_RANGE:
            self._out_of_range(p)
        elif p is not None and not p.done and code in GONE:
            self._maybe_gone(p, err)
        elif code != KafkaError._PARTITION_EOF:
            self.last_error = err.str()
            log.debug("Kafka consumer error in task %r (librdkafka retries): %s", self.task, err.str())

    def _watermarks(self, p: _Partition) -> tuple[int, int]:
        try:
            return self.consumer.get_watermark_offsets(p.tp, timeout=min(30.0, self.poll_timeout_s), cached=False)
        except Exception as err:
            raise KafkaSourceError(
                f"task {self.task!r}: cannot read the log start/end offsets of {p} to check for data loss: {err}"
            ) from None

    def _out_of_range(self, p: _Partition) -> None:
        low, high = self._watermarks(p)
        if p.next < low:
            self._data_loss(p, p.next, min(low, p.rng.end), f"the log now starts at offset {low}")
            if low >= p.rng.end:
                self._finish(p)
            else:
                p.next = low
                self._reposition(p, low)
        elif p.next >= high:
            self._data_loss(p, p.next, p.rng.end, f"the log now ends at offset {high} (topic re-created or truncated?)")
            self._finish(p)
        else:
            p.repositions += 1
            if p.repositions > MAX_REPOSITION:
                raise KafkaSourceError(
                    f"task {self.task!r}: the broker keeps answering 'offset out of range' for {p} at offset "
                    f"{p.next} although the log holds offsets {low}..{high - 1}"
                )
            self._reposition(p, p.next)
        self.last_progress = time.monotonic()

    def _check_start_gap(self, p: _Partition, first: int) -> None:
        """First record above the range start: data loss only if the log start moved past ``next`` meanwhile."""
        low, _ = self._watermarks(p)
        if low > p.next:
            self._data_loss(p, p.next, min(low, first, p.rng.end), f"the log now starts at offset {low}")

    def _maybe_gone(self, p: _Partition, err: KafkaError) -> None:
        try:
            md = self.consumer.list_topics(p.rng.topic, timeout=min(30.0, self.poll_timeout_s))
            tm = md.topics.get(p.rng.topic)
            exists = tm is not None and tm.error is None and p.rng.partition in tm.partitions
        except Exception:  # cannot tell: let librdkafka retry, the stall timeout bounds it
            exists = True
        if exists:
            self.last_error = err.str()
            return
        self._data_loss(p, p.next, p.rng.end, "the partition no longer exists (topic deleted?)")
        self._finish(p)
        self.last_progress = time.monotonic()

    def _data_loss(self, p: _Partition, lost_from: int, lost_to: int, why: str) -> None:
        data_loss(self.task, str(p), p.rng, lost_from, lost_to, why, self.fail_on_data_loss)

    def _stalled(self) -> None:
        pending = [f"{p} at offset {p.next} of [{p.rng.start}, {p.rng.end})" for p in self.order if not p.done]
        raise stalled_error(self.task, self.poll_timeout_s, pending, self.last_error)

    # ---- batches ------------------------------------------------------------------------------------------
    def _emit(self, p: _Partition) -> pa.RecordBatch:
        """Build the next batch of ``p``: up to max_rows rows, cut where key+value bytes reach max_bytes."""
        msgs = p.buf[: self.max_rows]
        keys = pa.array(list(map(_KEY, msgs)), pa.binary())
        values = pa.array(list(map(_VALUE, msgs)), pa.binary())
        n = len(msgs)
        if len(msgs) > 1:
            sizes = pc.add(pc.fill_null(pc.binary_length(keys), 0), pc.fill_null(pc.binary_length(values), 0))
            if pc.sum(sizes).as_py() >= self.max_bytes:
                reached = pc.greater_equal(pc.cumulative_sum(sizes), self.max_bytes)
                n = max(1, pc.index(reached, True).as_py() + 1)
                if n < len(msgs):
                    msgs = msgs[:n]
                    keys, values = keys.slice(0, n), values.slice(0, n)
        del p.buf[:n]
        p.vbytes = max(0, p.vbytes - (pc.sum(pc.binary_length(values)).as_py() or 0)) if p.buf else 0
        if p.paused and not p.done and len(p.buf) < self.max_rows and p.vbytes < self.wait_bytes // 2:
            self._resume(p)  # prefetch its next batch while the other partitions take their turn
        self.last_progress = time.monotonic()
        return self._batch(p.rng, msgs, keys, values)

    def _batch(self, rng: KafkaRange, msgs: list, keys: pa.Array, values: pa.Array) -> pa.RecordBatch:
        """Columns straight from the messages: each accessor mapped over the batch (C iteration) and converted by
        Arrow, the constant columns repeated scalars (benchmarks/README.md, "Less Python per record")."""
        n = len(msgs)
        # (type, ms) tuples flattened into one int64 array, viewed as pairs: 5x cheaper than unzipping them in
        # Python or converting them as structs
        stamps = pa.FixedSizeListArray.from_arrays(
            pa.array(list(chain.from_iterable(map(_TIMESTAMP, msgs))), pa.int64()), 2)
        timestamps = pc.multiply(pc.list_element(stamps, 1), 1000).cast(self.schema.field("timestamp").type)
        # confluent-kafka: 0 = not available, 1 = CreateTime, 2 = LogAppendTime; Spark (Java ids): -1, 0, 1.
        types = pc.subtract(pc.list_element(stamps, 0), 1).cast(pa.int32())
        columns = [
            keys,
            values,
            pa.repeat(pa.scalar(rng.topic, pa.string()), n),
            pa.repeat(pa.scalar(rng.partition, pa.int32()), n),
            pa.array(list(map(_OFFSET, msgs)), pa.int64()),
            timestamps,
            types,
        ]
        if self.include_headers:
            columns.append(pa.array(list(map(_HEADERS, msgs)), self.schema.field("headers").type))
        columns.append(pa.repeat(pa.scalar(self.task, pa.string()), n))
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)


def _runs(parts: list, errors: list, topics: list | None) -> list[tuple[int, int]]:
    """``[i, j)`` spans of consecutive messages of one partition (and topic) without error; an error message is a
    span of its own."""
    runs = []
    i, n = 0, len(parts)
    while i < n:
        j = i + 1
        if errors[i] is None:
            part = parts[i]
            topic = None if topics is None else topics[i]
            while j < n and parts[j] == part and errors[j] is None and (topics is None or topics[j] == topic):
                j += 1
        runs.append((i, j))
        i = j
    return runs
