"""Executor side of ``samza-kafka``: read a task's offset ranges and stream them out as Arrow RecordBatches.

``read_ranges`` is what ``DataSourceStreamReader.read(partition)`` returns for one Spark input partition (one
Samza task). One consumer per task, borrowed from :mod:`consumer_cache`, every range assigned at once. Output is
deterministic (round robin over partitions, each in offset order, batches cut by a rule that depends only on the
records), never past a range's end, never duplicated. Data loss is detected (``auto.offset.reset=error``) and
fails with :class:`KafkaDataLossError` unless ``failOnDataLoss`` is off; no progress for ``poll_timeout_ms`` fails
the task naming what is pending. Batches are built column by column with exactly :func:`kafka_arrow_schema`.

The rules are taken once, by read_control.py's ``RangeReadControl``, over one of two back-ends that move the
records: the native one (native_reader.py: per-record work in C over librdkafka), used where it is built, and the
Python one below (confluent-kafka), the fallback; option ``readPath`` chooses.

The read protocol and the reasons for these choices: docs/architecture.md §7.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterator, Mapping, Sequence
from itertools import chain

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import Consumer, KafkaError, Message, TopicPartition

from ...core.errors import InternalError
from .. import errors
from ..input_partition import KafkaRange
from ..options import INCLUDE_HEADERS, READ_PATH
from ..schema import kafka_arrow_schema
from .consumer_cache import ConsumerCache, default_cache
from .native_reader import NativeBackend, choose_read_path
from .read_control import ERROR_EVENT, FATAL, GAP_EVENT, RangeReadControl
from .read_settings import KafkaReadSettings
from .reader_rules import SPARK_MAX_MS, SPARK_MIN_MS, batch_cut

__all__ = ["read_ranges", "KafkaReadSettings"]

# Unbound accessors, mapped over a whole list of messages (see _route and _batch)
_PARTITION, _TOPIC, _ERROR, _OFFSET = Message.partition, Message.topic, Message.error, Message.offset
_KEY, _VALUE, _TIMESTAMP, _HEADERS = Message.key, Message.value, Message.timestamp, Message.headers
_IS_SET = functools.partial(operator.is_not, None)
# The candidates of a batch whose bytes exceed what a 32-bit-offset column holds (pyarrow then returns a chunked
# array) are measured in 64-bit-offset types instead; reader_rules.batch_cut keeps the batch within the limit, and
# its columns are cast back to the schema's types.
_LARGE_HEADERS = pa.list_(pa.struct([("key", pa.large_string()), ("value", pa.large_binary())]))


class _Partition:
    """Read state of one range: next expected offset, buffered messages, fetch state."""

    __slots__ = ("rng", "tp", "next", "buf", "vbytes", "done", "paused", "seen")

    def __init__(self, rng: KafkaRange) -> None:
        self.rng = rng
        self.tp = TopicPartition(rng.topic, rng.partition)
        self.next = rng.start
        self.buf: list = []  # confluent_kafka.Message, offsets next-len(buf) .. next-1 (with gaps)
        self.vbytes = 0  # value bytes in buf (pause heuristic only; batch cuts use key+value bytes)
        self.done = False  # nothing more to fetch (buf may still hold rows)
        self.paused = False
        self.seen = False  # a record of this range has been received


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
        raise InternalError(f"read_ranges takes settings or its fields, not both ({', '.join(fields)})")
    seen_tps: set[tuple[str, int]] = set()
    for r in ranges:
        if (r.topic, r.partition) in seen_tps:
            raise InternalError(f"partition {r.topic}[{r.partition}] appears twice in the ranges of task {task!r}")
        seen_tps.add((r.topic, r.partition))
    work = [r for r in ranges if r.size > 0]
    if not work:
        return
    native = choose_read_path(settings, client_conf) == "native"
    if cache is not None and cache.is_native != native:
        if settings.read_path != "auto":
            raise InternalError(f"read_ranges: the {settings.read_path} read path needs a cache of its consumers "
                             f"({'ConsumerCache.native' if native else 'ConsumerCache'})")
        native = cache.is_native  # auto with a caller's cache: the path whose consumers it holds
    pool = cache if cache is not None else default_cache(native=native)
    with pool.borrow(client_conf) as consumer:
        backend_class = NativeBackend if native else _PythonBackend
        backend = backend_class(consumer, task, work, settings.include_headers)
        yield from RangeReadControl(backend, task, work, settings).run()


class _PythonBackend:
    """The Python path's part of a read (read_control.ReadBackend) over a borrowed confluent-kafka consumer:
    messages are routed into per-range buffers of ``Message`` objects and batches built column by column in Arrow.
    The decisions are :class:`~.read_control.RangeReadControl`'s."""

    # whatever confluent-kafka raises when the broker cannot answer
    query_errors: tuple[type[BaseException], ...] = (Exception,)

    def __init__(self, consumer: Consumer, task: str, ranges: list[KafkaRange], include_headers: bool) -> None:
        self.consumer = consumer
        self.task = task
        self.include_headers = include_headers
        self.schema = kafka_arrow_schema(include_headers)
        self.order = [_Partition(r) for r in ranges]
        self.by_tp = {(p.rng.topic, p.rng.partition): (i, p) for i, p in enumerate(self.order)}
        self.single_topic = len({p.rng.topic for p in self.order}) == 1
        self.events: list[tuple] = []
        self.task_bytes = len(task.encode())
        self.candidates: tuple | None = None  # (range index, messages, keys, values, headers) measured by cut()

    # ---- the consumer -------------------------------------------------------------------------------------
    def start(self) -> None:
        self.consumer.assign([TopicPartition(p.rng.topic, p.rng.partition, p.rng.start) for p in self.order])
        self.consumer.resume([p.tp for p in self.order])  # a reused consumer may carry a stale pause flag

    def stop(self) -> None:
        """Nothing to hand over: confluent-kafka logs through Python logging itself."""

    def state(self, i: int) -> tuple[int, int, int, bool, bool]:
        p = self.order[i]
        return p.next, len(p.buf), p.vbytes, p.done, p.paused

    def fetch(self, want: int, wait_ms: int) -> tuple[int, int, bool, list[tuple]]:
        """One ``consume()`` call, its messages routed to their ranges."""
        msgs = self.consumer.consume(want, wait_ms / 1000.0)
        self.events = []
        if not msgs:
            return 0, 0, False, []
        before = sum(p.vbytes for p in self.order)
        progressed = self._route(msgs)
        return len(msgs), max(0, sum(p.vbytes for p in self.order) - before), progressed, self.events

    def pause(self, i: int, pause: bool) -> None:
        p = self.order[i]
        (self.consumer.pause if pause else self.consumer.resume)([p.tp])
        p.paused = pause

    def finish(self, i: int) -> None:
        p = self.order[i]
        p.done = True
        if not p.paused:
            self.pause(i, True)

    def set_next(self, i: int, offset: int) -> None:
        self.order[i].next = offset

    def reposition(self, i: int, offset: int) -> None:
        """Restart fetching at ``offset`` (``seek`` is refused once librdkafka reported out-of-range)."""
        p = self.order[i]
        self.consumer.incremental_unassign([p.tp])
        self.consumer.incremental_assign([TopicPartition(p.rng.topic, p.rng.partition, offset)])
        if p.paused:
            self.consumer.pause([p.tp])

    def positions(self, indexes: list[int]) -> list[int]:
        return [tp.offset for tp in self.consumer.position([self.order[i].tp for i in indexes])]

    def watermarks(self, i: int, timeout_ms: int) -> tuple[int, int]:
        return self.consumer.get_watermark_offsets(self.order[i].tp, timeout=timeout_ms / 1000.0, cached=False)

    def partition_exists(self, i: int, timeout_ms: int) -> bool:
        rng = self.order[i].rng
        tm = self.consumer.list_topics(rng.topic, timeout=timeout_ms / 1000.0).topics.get(rng.topic)
        return tm is not None and tm.error is None and rng.partition in tm.partitions

    # ---- routing ------------------------------------------------------------------------------------------
    def _route(self, msgs: list) -> bool:
        """Hand consumed messages to their ranges, a run of consecutive same-partition messages at a time
        (librdkafka delivers a fetch response's records together), so the usual case costs a slice copy; errors
        become events. Whether a live range took records.

        Per-message accessors run through ``map`` (C iteration, no Python frame per record): the partition and
        error of every message are read once, and runs are found on those lists."""
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
            error, part = errors[i], parts[i]
            if error is not None:
                self._error_event(msgs[i], error)
                continue
            assert part is not None  # only an error message has no partition, and it is a run of its own
            index, p = self.by_tp.get((msgs[i].topic(), part), (-1, None))
            if p is not None and not p.done:
                self._take(index, p, msgs, i, j)
                progressed = True
        return progressed

    def _error_event(self, m, err: KafkaError) -> None:
        """An error message as the controller's event (partition EOF is no news)."""
        if err.code() == KafkaError._PARTITION_EOF:
            return
        index = self.by_tp.get((m.topic(), m.partition()), (-1, None))[0] if m.topic() is not None else -1
        self.events.append((ERROR_EVENT, index, FATAL if err.fatal() else err.code(), err.str()))

    def _take(self, index: int, p: _Partition, msgs: list, i: int, j: int) -> None:
        """Append ``msgs[i:j]`` (records of ``p``, offsets ascending) within ``[next, end)``; finish ``p`` at end."""
        first, last = msgs[i].offset(), msgs[j - 1].offset()
        if last < p.next:  # all refetched after a pause / reposition
            return
        if first > p.next and not p.seen:
            self.events.append((GAP_EVENT, index, first, p.next))
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
            self.finish(index)

    # ---- batches ------------------------------------------------------------------------------------------
    def cut(self, i: int, max_rows: int, max_bytes: int, limit: int) -> tuple[int, int, str, int]:
        """The rows the next batch of range ``i`` takes (reader_rules.batch_cut over the bytes of every column);
        the candidates' columns are kept for :meth:`emit`."""
        p = self.order[i]
        msgs = p.buf[:max_rows]
        keys = _column(list(map(_KEY, msgs)), pa.binary(), pa.large_binary())
        values = _column(list(map(_VALUE, msgs)), pa.binary(), pa.large_binary())
        sizes = {"key": _lengths(keys), "value": _lengths(values)}
        headers = None
        if self.include_headers:
            headers = _column(self._headers(p, msgs), self.schema.field("headers").type, _LARGE_HEADERS)
            sizes["header keys"], sizes["header values"] = _header_lengths(headers)
        self.candidates = (i, msgs, keys, values, headers)
        fixed = {"topic": len(p.rng.topic.encode()), "task": self.task_bytes}
        rows, column, size = batch_cut(sizes, fixed, max_rows, max_bytes, limit)
        return rows, msgs[0].offset(), column, size

    def _headers(self, p: _Partition, msgs: list) -> list:
        """The messages' headers; confluent-kafka cannot decode a header key that is not UTF-8 (it raises
        SystemError, or UnicodeDecodeError): the read then fails naming the record and the way out."""
        got: list = []
        try:
            got.extend(map(_HEADERS, msgs))  # (on an error, what came before it stays: the failed one is next)
            return got
        except (SystemError, UnicodeDecodeError):
            m = msgs[len(got)]
        raise errors.header_key_not_utf8(self.task, m.offset(), f"{p.rng.topic}[{p.rng.partition}]",
                                         read_path_option=READ_PATH.name,
                                         include_headers_option=INCLUDE_HEADERS.name)

    def emit(self, i: int, rows: int) -> pa.RecordBatch:
        """The batch of the next ``rows`` records of range ``i``, from the columns :meth:`cut` measured."""
        p = self.order[i]
        if self.candidates is None or self.candidates[0] != i:
            self.cut(i, rows, 2**63 - 1, 2**63 - 1)
        assert self.candidates is not None  # cut() keeps the columns it measured
        _, msgs, keys, values, headers = self.candidates
        self.candidates = None
        msgs = msgs[:rows]
        keys, values = _narrow(keys.slice(0, rows), pa.binary()), _narrow(values.slice(0, rows), pa.binary())
        if headers is not None:
            headers = _narrow(headers.slice(0, rows), self.schema.field("headers").type)
        del p.buf[:rows]
        p.vbytes = max(0, p.vbytes - (pc.sum(pc.binary_length(values)).as_py() or 0)) if p.buf else 0
        return self._batch(p.rng, msgs, keys, values, headers)

    def _batch(self, rng: KafkaRange, msgs: list, keys: pa.Array, values: pa.Array,
               headers: pa.Array | None) -> pa.RecordBatch:
        """Columns straight from the messages: each accessor mapped over the batch (C iteration) and converted by
        Arrow, the constant columns repeated scalars (benchmarks/README.md, "kafka_native.py and
        kafka_reader_raw.py")."""
        n = len(msgs)
        # (type, ms) tuples flattened into one int64 array, viewed as pairs: 5x cheaper than unzipping them in
        # Python or converting them as structs
        stamps = pa.FixedSizeListArray.from_arrays(
            pa.array(list(chain.from_iterable(map(_TIMESTAMP, msgs))), pa.int64()), 2)
        # clamped to Spark's range first: the product would overflow int64 (read_control warns)
        ms = pc.min_element_wise(pc.max_element_wise(pc.list_element(stamps, 1), SPARK_MIN_MS), SPARK_MAX_MS)
        timestamps = pc.multiply(ms, 1000).cast(self.schema.field("timestamp").type)
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
        if headers is not None:
            columns.append(headers)
        columns.append(pa.repeat(pa.scalar(self.task, pa.string()), n))
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)


def _column(items: list, kind: pa.DataType, large: pa.DataType) -> pa.Array:
    """``items`` as an array of ``kind``, or of ``large`` (64-bit offsets) when they exceed one ``kind`` column."""
    try:
        array = pa.array(items, kind)
    except pa.ArrowCapacityError:  # a nested column's child past the limit
        return pa.array(items, large)
    return pa.array(items, large) if isinstance(array, pa.ChunkedArray) else array


def _narrow(array: pa.Array, kind: pa.DataType) -> pa.Array:
    return array if array.type == kind else array.cast(kind)


def _lengths(column: pa.Array) -> pa.Array:
    """Each record's bytes in a binary ``column`` (0 for null)."""
    return pc.fill_null(pc.binary_length(column), 0)


def _header_lengths(headers: pa.ListArray) -> tuple[pa.Array, pa.Array]:
    """Each record's header key bytes and header value bytes (0 without headers): per-entry lengths summed over
    each record's slice of the entries, as differences of their running sum at the list offsets."""
    entries = headers.values
    per_record = []
    for field in ("key", "value"):
        running = pc.cumulative_sum(_lengths(entries.field(field)).cast(pa.int64()))
        running = pa.concat_arrays([pa.array([0], pa.int64()), running])
        at = pc.take(running, headers.offsets)
        per_record.append(pc.subtract(at.slice(1), at.slice(0, len(at) - 1)))
    return per_record[0], per_record[1]


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
