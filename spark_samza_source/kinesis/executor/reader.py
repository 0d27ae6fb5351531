"""Executor side of ``samza-kinesis``: read one shard from a position, as Arrow RecordBatches, and say where it ended.

Used through ``shard_reads`` (``open_shard_reader``, ``read_shard``) for each shard of a task. :class:`ShardReader`
reads a :class:`ShardRead` from ``start`` until the first stop condition (``recorded_end`` reached exactly,
``max_records`` user records, ``max_fetch_time_ms``, caught up, or shard end), handing out rows as they are read,
then reports the end.
A retried or speculative attempt passes the recorded end back and gets exactly the same rows.

Bounded robustness: throttling retried with exponential backoff, expired iterators renewed from the position
reached, at most one ``GetRecords`` per 200 ms per shard. Trimmed data is detected (a position after S resumes
AT_SEQUENCE_NUMBER S) and fails with :class:`KinesisDataLossError` unless ``fail_on_data_loss`` is off. KPL
aggregates are de-aggregated (``kpl``). The read protocol and its reasons: docs/architecture.md §8.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any, Final

import pyarrow as pa
from botocore.exceptions import ClientError

from ...core.errors import InternalError
from ...options.common import FAIL_ON_DATA_LOSS
from .. import errors, kpl
from ..calls import (
    THROTTLING_CODES,
    UNREACHABLE,
    KinesisCalls,
    error_code,
    is_outage,
    iterator_request,
    unreachable,
)
from ..client import AwsClientSettings
from ..errors import KinesisDataLossError, ThrottledAtDeadlineError
from ..options import DEFAULT_MAX_FETCH_TIME_MS, DEFAULT_MAX_RECORDS_PER_SHARD
from ..positions import AFTER_SEQUENCE_NUMBER, AT_SEQUENCE_NUMBER, AT_TIMESTAMP, EVERY_SUB, SHARD_END, ShardPosition
from ..schema import kinesis_arrow_schema

__all__ = [
    "ShardRead",
    "ShardReadResult",
    "ShardReadSettings",
    "shard_read_args",
    "ShardReader",
    "DEFAULT_RECORDS_PER_CALL",
    "DEFAULT_MIN_CALL_INTERVAL_MS",
    "DEFAULT_EXACT_TIMEOUT_MS",
    "STOP_RECORDED_END",
    "STOP_MAX_RECORDS",
    "STOP_MAX_FETCH_TIME",
    "STOP_CAUGHT_UP",
    "STOP_SHARD_END",
]

log = logging.getLogger(__name__)

DEFAULT_RECORDS_PER_CALL = 10_000  # the GetRecords maximum
DEFAULT_MIN_CALL_INTERVAL_MS = 200  # 5 GetRecords per second per shard
DEFAULT_MAX_ROWS_PER_BATCH = 10_000
DEFAULT_EXACT_TIMEOUT_MS = 300_000
DEFAULT_MAX_RETRIES = 10
_CAUGHT_UP_CONFIRMATIONS = 3  # exact reads: caught-up responses before "the recorded end is not there" is believed

STOP_RECORDED_END = "recorded_end"
STOP_MAX_RECORDS = "max_records"
STOP_MAX_FETCH_TIME = "max_fetch_time"
STOP_CAUGHT_UP = "caught_up"
STOP_SHARD_END = "shard_end"
STOP_ARRIVED_LATER = "arrived_after_available_now_start"

_ALL = EVERY_SUB  # "every sub-record" when comparing sub-sequence numbers


class _Finished(enum.Enum):
    """The type of :data:`_FINISHED`: an enum member, so that ``is _FINISHED`` narrows an iterator's type."""

    FINISHED = enum.auto()


_FINISHED: Final = _Finished.FINISHED  # in place of an iterator: the read has ended (``result`` is set)


def _arrival_ms(record: dict[str, Any]) -> int:
    arrival = record.get("ApproximateArrivalTimestamp")
    if arrival is None:
        return -1
    return int(arrival.timestamp() * 1000) if hasattr(arrival, "timestamp") else int(arrival)


@dataclass
class ShardReadResult:
    """What one :class:`ShardRead` read: the rows (``batches``, schema ``kinesis_arrow_schema()``) and where it ended.

    ``end`` is where the next batch starts: ``AFTER_SEQUENCE_NUMBER(last sequence, last sub or -1)``, ``SHARD_END``,
    or ``start`` itself when nothing was read.
    """

    stream: str
    shard_id: str
    start: ShardPosition
    end: ShardPosition
    stop: str
    batches: list[pa.RecordBatch] = field(default_factory=list)
    records: int = 0  # user records (rows)
    kinesis_records: int = 0  # Kinesis records consumed (an aggregate counts once)
    calls: int = 0  # GetRecords calls
    retries: int = 0  # throttled calls and expired iterators
    millis_behind_latest: int | None = None
    lost: list[str] = field(default_factory=list)  # data loss tolerated with fail_on_data_loss=False

    def table(self) -> pa.Table:
        return pa.Table.from_batches(self.batches, schema=kinesis_arrow_schema())


@dataclass(frozen=True)
class ShardReadSettings:
    """How an executor reads shards, the same for every shard of a task: built once per task and handed to each
    read, as Spark's ``KafkaBatchInputPartition`` carries its consumer settings.

    ``max_records`` user records and ``max_fetch_time_ms`` bound a read (an exact read, which has a recorded end,
    is bounded by ``exact_timeout_ms`` instead); ``records_per_call`` is the ``GetRecords`` limit (at most 10 000),
    ``min_call_interval_ms`` the pacing between calls on one shard, ``max_retries`` the throttled calls in a row
    before the read fails, ``max_rows_per_batch`` the rows per Arrow batch handed out. ``aws_settings`` only
    serves to scrub credentials out of error texts; ``sleep`` is the clock's wait (tests replace it).
    """

    max_records: int = DEFAULT_MAX_RECORDS_PER_SHARD
    max_fetch_time_ms: int = DEFAULT_MAX_FETCH_TIME_MS
    fail_on_data_loss: bool = True
    records_per_call: int = DEFAULT_RECORDS_PER_CALL
    max_rows_per_batch: int = DEFAULT_MAX_ROWS_PER_BATCH
    min_call_interval_ms: int = DEFAULT_MIN_CALL_INTERVAL_MS
    max_retries: int = DEFAULT_MAX_RETRIES
    exact_timeout_ms: int = DEFAULT_EXACT_TIMEOUT_MS
    aws_settings: AwsClientSettings | None = None
    sleep: Callable[[float], None] = time.sleep

    def __post_init__(self) -> None:
        if (self.max_records < 1 or self.records_per_call < 1 or self.max_rows_per_batch < 1
                or self.max_fetch_time_ms < 0):
            raise InternalError("max_records, records_per_call and max_rows_per_batch must be >= 1, "
                             "max_fetch_time_ms >= 0")


@dataclass(frozen=True)
class ShardRead:
    """The request of one read of one shard: ``shard_id`` of ``stream`` from ``start``, its rows tagged with ``task``.

    The executor builds it from the driver's plan (``input_partition.PlannedShardRead``) and the task's options;
    how to read (limits, pacing) is in the task's :class:`ShardReadSettings`, what was read in a
    :class:`ShardReadResult`.

    ``ending_sequence`` is the shard's ``EndingSequenceNumber`` when it is closed (``ShardInfo.ending_sequence``).
    ``recorded_end`` makes the read exact (a retried / speculative attempt reads to where the first one stopped).
    ``hash_range`` keeps only the KPL sub-records whose hash key lies in it. ``until_arrival_ms``
    (``Trigger.AvailableNow``) stops before the first record that arrived after that time, so the trigger reads
    what was there when it started; an exact read ignores it (the recorded end decides). ``consumer_arn`` (a
    registered stream consumer) reads through ``SubscribeToShard`` subscriptions (``fanout``) instead of
    ``GetRecords`` polling; the rows, positions and stop rules are the same.
    """

    stream: str
    shard_id: str
    start: ShardPosition
    task: str
    ending_sequence: str | None = None
    recorded_end: ShardPosition | None = None
    hash_range: tuple[int, int] | None = None
    until_arrival_ms: int | None = None
    consumer_arn: str | None = None


_READ_FIELDS = frozenset(f.name for f in fields(ShardRead))
_SETTINGS_FIELDS = frozenset(f.name for f in fields(ShardReadSettings))


def shard_read_args(stream: str, shard_id: str, start: ShardPosition, *, task: str,
                    **options: Any) -> tuple[ShardRead, ShardReadSettings]:
    """The :class:`ShardRead` and :class:`ShardReadSettings` of one read (the arguments of ``open_shard_reader``)
    from keyword options (the fields of both), for callers that read one shard by hand (tests, benchmarks, tools);
    an unknown option is a TypeError naming it."""
    unknown = sorted(set(options) - _READ_FIELDS - _SETTINGS_FIELDS)
    if unknown:
        raise TypeError(f"unknown shard read option(s): {', '.join(unknown)}")
    read = ShardRead(stream, shard_id, start, task, **{k: v for k, v in options.items() if k in _READ_FIELDS})
    return read, ShardReadSettings(**{k: v for k, v in options.items() if k in _SETTINGS_FIELDS})


class _NotYet(Exception):
    """Kinesis refused an ``AT_TIMESTAMP`` later than its clock: nothing to read yet."""


class _ShardGone(Exception):
    def __init__(self, err: BaseException) -> None:
        super().__init__(str(err))
        self.err = err


class ShardReader:
    """The reader of one :class:`ShardRead` by ``GetRecords`` polling (built by :func:`open_shard_reader`, which picks
    it or fan-out's subclass): iterate for the rows, then look at ``result``; or ``run()`` for both at once."""

    def __init__(self, client: Any, read: ShardRead, settings: ShardReadSettings) -> None:
        aws_settings = settings.aws_settings
        self.client = client
        self.calls = KinesisCalls(client, settings=aws_settings, max_retries=settings.max_retries,
                                  sleep=settings.sleep)
        self.scrub = aws_settings.scrub if aws_settings is not None else (lambda t: str(t)[:1000])
        self.stream = read.stream
        self.shard_id = read.shard_id
        self.start = start = read.start
        self.task = read.task
        self.ending = int(read.ending_sequence) if read.ending_sequence is not None else None
        self.recorded = recorded_end = read.recorded_end
        self.exact = recorded_end is not None
        self.until_arrival_ms = None if self.exact else read.until_arrival_ms
        self.max_records = settings.max_records
        self.fail_on_data_loss = settings.fail_on_data_loss
        self.hash_range = read.hash_range
        self.limit = min(settings.records_per_call, DEFAULT_RECORDS_PER_CALL)
        self.max_rows = settings.max_rows_per_batch
        self.interval_s = max(0, settings.min_call_interval_ms) / 1000.0
        self.max_retries = settings.max_retries
        self.sleep = settings.sleep
        now = time.monotonic()
        self.deadline = now + (settings.exact_timeout_ms if self.exact else settings.max_fetch_time_ms) / 1000.0
        self.last_call = -1e9
        self.schema = kinesis_arrow_schema()
        self.result = ShardReadResult(self.stream, self.shard_id, start, start, "")
        self._pos = start
        self._last_read: tuple[str, int] | None = None  # (sequence, sub) of the last row read, not yet in _pos
        # the record a (re)acquired iterator must start with: (sequence, last sub already consumed or -1 = none
        # consumed, or _ALL), and whether a different first record means data loss
        self.expect: tuple[int, int, bool] | None = None
        self.recorded_key = (recorded_end.sequence_order()
                             if recorded_end is not None and recorded_end.sequence else None)
        self._cols: tuple[list, list, list, list, list] = ([], [], [], [], [])
        self._ready: list[pa.RecordBatch] = []  # flushed, not yet handed out

    # ---- main loop ----------------------------------------------------------------------------------------
    def run(self) -> ShardReadResult:
        """Read to the end and return the result with every batch."""
        batches = list(self)
        self.result.batches = batches
        return self.result

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        """The rows, handed out after every ``GetRecords`` response; ``result`` is final once this is exhausted."""
        try:
            for _ in self._steps():
                self._flush()
                yield from self._take()
        except _ShardGone as gone:
            self._gone(gone.err)
        yield from self._take()

    def _take(self) -> list[pa.RecordBatch]:
        ready, self._ready = self._ready, []
        return ready

    def _steps(self) -> Iterator[None]:
        """The read loop; pauses (yields) after each response so that its rows can be handed out. Every way out
        sets ``result`` (``_finish``) or raises."""
        if self._finished_before_reading():
            return
        iterator = self._first_iterator()
        self._retries = 0
        self._outage = self.calls.retry_clock()
        confirmations = 0
        while iterator is not _FINISHED:
            if iterator is None:  # real Kinesis: a closed shard read to its end
                self._shard_end()
                return
            if self._out_of_time():
                return
            limit = self._call_limit()
            self._pace()
            try:
                resp = self.client.get_records(ShardIterator=iterator, Limit=limit)
            except (*UNREACHABLE, ClientError) as err:
                iterator = self._after_failed_call(err, iterator)
                continue
            self._retries = 0
            self._outage.ok()
            self.result.calls += 1
            records = resp.get("Records", [])
            behind = self.result.millis_behind_latest = resp.get("MillisBehindLatest")
            if self._consume(records) is not None:
                return
            yield
            iterator = resp.get("NextShardIterator")
            caught_up = iterator is not None and behind == 0 and len(records) < limit
            confirmations = confirmations + 1 if caught_up else 0
            if caught_up and self._stopped_caught_up(confirmations):
                return

    def _finished_before_reading(self) -> bool:
        """Finish at once when there is nothing to read: an exact read whose recorded end is its start, a start
        at SHARD_END, or a start after the last record of a closed shard."""
        start = self.start
        if self.exact:
            self._check_recorded()
            if self.recorded == start:
                self._finish(start, STOP_RECORDED_END)
                return True
        if start.is_shard_end:
            self._finish(start, STOP_SHARD_END)
            return True
        if (not self.exact and self.ending is not None and start.type == AFTER_SEQUENCE_NUMBER
                and start.sub < 0 and start.sequence_order()[0] >= self.ending):
            self._finish(ShardPosition.shard_end(), STOP_SHARD_END)
            return True
        return False

    def _first_iterator(self) -> str | None | _Finished:
        """The iterator to start with, or ``_FINISHED`` when the read already ended (throttled to its deadline,
        or a start later than Kinesis' clock)."""
        try:
            return self._acquire(self.pos)
        except ThrottledAtDeadlineError:
            self._finish(self.pos, STOP_MAX_FETCH_TIME)
        except _NotYet as err:
            if self.exact:
                why = f"Kinesis refuses the start as later than its clock: {self.scrub(err)}"
                raise self._exact_error(why) from None
            log.info("task %r: shard %s of %s: %s is later than Kinesis' clock; nothing to read yet", self.task,
                     self.shard_id, self.stream, self.pos)
            self._finish(self.pos, STOP_CAUGHT_UP)
        return _FINISHED

    def _out_of_time(self) -> bool:
        """Past the deadline: a bounded read finishes where it stands; an exact read fails (its end is required)."""
        if time.monotonic() < self.deadline:
            return False
        if self.exact:
            raise self._exact_error("it was not reached within exact_timeout_ms (throttled, or the "
                                    "shard is not draining?)")
        self._finish(self.pos, STOP_MAX_FETCH_TIME)
        return True

    def _call_limit(self) -> int:
        """The ``Limit`` of the next ``GetRecords``: what is left of ``max_records``, page-sized when exact."""
        left = self.max_records - self.result.records
        limit = self.limit if self.exact else min(self.limit, max(1, left))
        if self.expect is not None and not self.exact:
            if limit == self.limit == left and self.limit > 1:
                # the resumed-at record (skipped) takes one place of a full page: stop one row short rather
                # than spend a second call (and up to 200 ms of pacing) on the last row; max_records is a cap
                self.max_records -= 1
            else:
                limit = min(self.limit, limit + 1)  # the resumed-at record is skipped: ask for one more
        return limit

    def _after_failed_call(self, err: BaseException, iterator: str) -> str | None | _Finished:
        """The iterator to go on with after ``GetRecords`` failed (the same one, or a renewed one once expired),
        or ``_FINISHED``; raises when the failure is not one to wait out."""
        if is_outage(err):
            if self._outage.retry():  # the same iterator again (an expired one is renewed below)
                return iterator
            raise unreachable(f"task {self.task!r}: GetRecords on shard {self.shard_id} of stream "
                              f"{self.stream!r} at {self.pos}", self.calls.where(), err, self.scrub,
                              self._outage) from None
        code = error_code(err)
        self._retries += 1
        self.result.retries += 1
        if code not in THROTTLING_CODES and code != "ExpiredIteratorException":
            if code == "ResourceNotFoundException":
                raise _ShardGone(err) from None
            raise errors.operation_failed(f"task {self.task!r}: GetRecords on shard {self.shard_id} of stream "
                                          f"{self.stream!r} at {self.pos}", self.calls.where(),
                                          self.scrub(err)) from None
        if self._retries > self.max_retries:
            raise errors.kept_throttled(
                f"task {self.task!r}: GetRecords on shard {self.shard_id} of stream {self.stream!r} at "
                f"{self.pos}", code, self.max_retries, self.calls.where(),
                "; another consumer may be using the shard's 5 reads/s or 2 MB/s") from None
        if code != "ExpiredIteratorException":
            self._backoff(self._retries)
            return iterator
        try:
            return self._acquire(self.pos)
        except ThrottledAtDeadlineError:
            self._finish(self.pos, STOP_MAX_FETCH_TIME)
        except _NotYet:
            self._finish(self.pos, STOP_CAUGHT_UP)
        return _FINISHED

    def _stopped_caught_up(self, confirmations: int) -> bool:
        """After a response that caught up with the shard's tip: a closed shard ends, a bounded read finishes;
        an exact read goes on, and fails once several responses agree its recorded end does not exist."""
        if self.ending is not None:  # closed shard: nothing will ever follow
            self._shard_end()
            return True
        if not self.exact:
            self._finish(self.pos, STOP_CAUGHT_UP)
            return True
        if confirmations >= _CAUGHT_UP_CONFIRMATIONS:
            raise self._exact_error("the shard holds no more records (caught up), so it lies beyond the "
                                    "data that exists now (stream re-created?)")
        return False

    @property
    def _recorded_end(self) -> ShardPosition:
        """The end an earlier attempt recorded, for the code of an exact read only."""
        assert self.recorded is not None  # an exact read is one given a recorded end
        return self.recorded

    @property
    def pos(self) -> ShardPosition:
        """Where the read stands: after the last row read (built on demand: the loop runs once per record)."""
        if self._last_read is not None:
            self._pos = ShardPosition.after_sequence(*self._last_read)
            self._last_read = None
        return self._pos

    # ---- records ------------------------------------------------------------------------------------------
    def _consume(self, records: list[dict[str, Any]]) -> ShardReadResult | None:
        """Turn one response's records into rows; a result when reading must stop here."""
        res = self.result
        for record in records:
            seq = record["SequenceNumber"]
            iseq = int(seq)
            skip_to = -1 if self.expect is None else self._resumed_at(iseq)  # sub-records 0..skip_to consumed
            if skip_to is None:  # before our position (never from Kinesis): already consumed
                continue
            stop = self._stop_before(record, iseq)
            if stop is not None:
                return stop
            res.kinesis_records += 1
            users = kpl.deaggregate_tuples(record["Data"])
            if users is not None and self.hash_range is not None and users and not self._in_range(users):
                users = []
            count = 1 if users is None else len(users)
            first = 0 if skip_to < 0 else min(count, skip_to + 1)
            stop_at = count  # exclusive
            recorded_key = self.recorded_key
            exact_here = recorded_key is not None and iseq == recorded_key[0]
            if exact_here:
                assert recorded_key is not None  # exact_here says so
                stop_at = min(stop_at, recorded_key[1] + 1)
            elif not self.exact:
                stop_at = min(stop_at, first + self.max_records - res.records)
            if stop_at > first:
                self._append_rows(record, users, first, stop_at)
            whole = stop_at >= count
            self._last_read = (seq, -1 if whole else stop_at - 1)  # a position object only when asked (pos)
            if exact_here:
                return self._finish(self._recorded_end, STOP_RECORDED_END)
            if whole and self.ending is not None and iseq >= self.ending:
                return self._shard_end()
            if not self.exact and res.records >= self.max_records:
                return self._finish(self.pos, STOP_MAX_RECORDS)
        return None

    def _resumed_at(self, iseq: int) -> int | None:
        """The first record after a (re)acquired iterator: the last sub-record of it already consumed (-1: none),
        None to skip it whole; a later record than expected is data loss (the expected one was trimmed)."""
        assert self.expect is not None  # called only while a resumed read expects its first record
        exp_seq, exp_sub, loss_if_missing = self.expect
        if iseq < exp_seq:
            return None
        self.expect = None
        if iseq == exp_seq:
            return exp_sub
        if loss_if_missing:
            self._data_loss(exp_seq, iseq)
        return -1

    def _stop_before(self, record: dict[str, Any], iseq: int) -> ShardReadResult | None:
        """A result when ``record`` must not be read: past a closed shard's end, past the recorded end, or
        arrived after the ``Trigger.AvailableNow`` cut-off."""
        if self.ending is not None and iseq > self.ending:  # never past the shard's stated end...
            self._past_stated_end(iseq)  # ...but a record there contradicts it: never trusted silently
            return self._shard_end()
        if self.recorded_key is not None and iseq > self.recorded_key[0]:
            return self._passed_recorded_end(iseq)
        if self.until_arrival_ms is not None and _arrival_ms(record) > self.until_arrival_ms:
            return self._finish(self.pos, STOP_ARRIVED_LATER)
        return None

    def _append_rows(self, record: dict[str, Any], users: list | None, first: int, stop_at: int) -> None:
        """Rows ``first`` .. ``stop_at - 1`` of ``record`` (its KPL sub-records, or the record itself) into the
        columns; a full batch is flushed."""
        data_col, pk_col, seq_col, sub_col, ts_col = self._cols
        seq, arrival = record["SequenceNumber"], record.get("ApproximateArrivalTimestamp")
        if users is None:
            data_col.append(record["Data"])
            pk_col.append(record["PartitionKey"])
            seq_col.append(seq)
            sub_col.append(0)
            ts_col.append(arrival)
        else:
            for i in range(first, stop_at):
                pk, data, _ = users[i]
                data_col.append(data)
                pk_col.append(pk)
                seq_col.append(seq)
                sub_col.append(i)
                ts_col.append(arrival)
        self.result.records += stop_at - first
        if len(data_col) >= self.max_rows:
            self._flush()

    def _in_range(self, users: list[tuple[str, bytes, str | None]]) -> bool:
        assert self.hash_range is not None  # called only for a read given a hash range
        lo, hi = self.hash_range
        return all(lo <= kpl.effective_hash_key(pk, ehk) <= hi for pk, _, ehk in users)

    def _flush(self) -> None:
        data_col, pk_col, seq_col, sub_col, ts_col = self._cols
        n = len(data_col)
        if not n:
            return
        schema = self.schema
        batch = pa.RecordBatch.from_arrays([
            pa.array(data_col, pa.binary()),
            pa.array([self.stream] * n, pa.string()),
            pa.array(pk_col, pa.string()),
            pa.array(seq_col, pa.string()),
            pa.array(sub_col, pa.int64()),
            pa.array(ts_col, schema.field("approximateArrivalTimestamp").type),
            pa.array([self.shard_id] * n, pa.string()),
            pa.array([self.task] * n, pa.string()),
        ], schema=schema)
        self._ready.append(batch)
        for col in self._cols:
            col.clear()

    # ---- iterators, pacing --------------------------------------------------------------------------------
    def _acquire(self, pos: ShardPosition) -> str | None:
        """An iterator for ``pos``; AFTER positions start AT their record (skipped) so a trimmed one is noticed."""
        if pos.is_shard_end:
            return None
        request = self._start_request(pos)
        what = f"task {self.task!r}: GetShardIterator for shard {self.shard_id} of stream {self.stream!r} at {pos}"
        try:
            resp = self.calls.call(what, self.client.get_shard_iterator, StreamName=self.stream,
                                   ShardId=self.shard_id, deadline=None if self.exact else self.deadline, **request)
        except ClientError as err:
            return self._acquire(self._start_refused(err, pos, what))
        return resp.get("ShardIterator")

    def _start_request(self, pos: ShardPosition) -> dict[str, Any]:
        """Where Kinesis is asked to start for ``pos`` (``GetShardIterator`` parameters; the fan-out reader turns
        them into a ``StartingPosition``), noting the record a resumed read must begin with (``expect``)."""
        request = iterator_request(pos, at_for_after=True)
        assert request is not None
        if pos.type == AFTER_SEQUENCE_NUMBER:
            self.expect = (pos.sequence_order()[0], _ALL if pos.sub < 0 else pos.sub, True)
        else:
            self.expect = None
        return request

    def _start_refused(self, err: ClientError, pos: ShardPosition, what: str) -> ShardPosition:
        """Kinesis refused to start reading at ``pos``: the position to try instead (``TRIM_HORIZON`` after a
        sequence number older than the trim horizon, the loss recorded), or raise what the refusal means."""
        code = error_code(err)
        if code == "ResourceNotFoundException":
            raise _ShardGone(err) from None
        if code == "InvalidArgumentException" and pos.type == AT_TIMESTAMP and "currentTimestamp" in str(err):
            # Kinesis' clock has not reached the timestamp yet (AWS refuses a future AT_TIMESTAMP; the driver
            # resolved LATEST or a startpoint by its own clock): nothing at or after it exists yet
            raise _NotYet(err) from None
        if code == "InvalidArgumentException" and pos.type == AFTER_SEQUENCE_NUMBER:
            # Kinesis may refuse a sequence number older than the trim horizon: resume at the oldest record
            self._data_loss(pos.sequence_order()[0], None, detail=f"Kinesis refused the position: {self.scrub(err)}")
            self.expect = None
            return ShardPosition.trim_horizon()
        raise errors.operation_failed(what, self.calls.where(), self.scrub(err)) from None

    def _pace(self) -> None:
        wait = self.last_call + self.interval_s - time.monotonic()
        if wait > 0:
            self.sleep(wait)
        self.last_call = time.monotonic()

    def _backoff(self, attempt: int) -> None:
        delay = max(self.calls.backoff_s(attempt - 1), self.interval_s)
        if not self.exact:
            delay = min(delay, max(0.0, self.deadline - time.monotonic()))
        if delay > 0:
            self.sleep(delay)

    # ---- endings ------------------------------------------------------------------------------------------
    def _finish(self, end: ShardPosition, stop: str) -> ShardReadResult:
        self._flush()
        res = self.result
        res.end = end
        res.stop = stop
        log.debug("task %r: shard %s of %s read %d records (%d Kinesis records, %d calls) from %s to %s: %s",
                  self.task, self.shard_id, self.stream, res.records, res.kinesis_records, res.calls, self.start,
                  end, stop)
        return res

    def _shard_end(self) -> ShardReadResult:
        if self.exact and not self._recorded_end.is_shard_end:
            raise self._exact_error("the shard ended before it")
        return self._finish(ShardPosition.shard_end(), STOP_RECORDED_END if self.exact else STOP_SHARD_END)

    def _gone(self, err: BaseException) -> ShardReadResult:
        what = (f"shard {self.shard_id} of stream {self.stream!r} no longer exists ({self.calls.where()}): it "
                f"expired (closed shards disappear after the retention period) or the stream was deleted, while "
                f"records from {self.pos} on were still to be read. Kinesis said: {self.scrub(err)}")
        self._loss(what)
        if self.exact:
            return self._finish(self._recorded_end, STOP_RECORDED_END)
        return self._finish(ShardPosition.shard_end(), STOP_SHARD_END)

    def _data_loss(self, after_seq: int, first_available: int | None, detail: str = "") -> None:
        gap = (f"records after sequence number {after_seq} up to (excluding) {first_available}"
               if first_available is not None else f"records after sequence number {after_seq}")
        self._loss(f"shard {self.shard_id} of stream {self.stream!r}: the {gap} are no longer available: they are "
                   f"older than the stream's retention period (trimmed)" + (f"; {detail}" if detail else ""))

    def _loss(self, what: str) -> None:
        text = f"data loss in task {self.task!r} reading from {self.start}"
        if self.exact:
            text += f" exactly to the end an earlier attempt recorded ({self.recorded})"
        text += f": {what}"
        if self.fail_on_data_loss:
            raise errors.read_data_loss(text)
        log.warning("%s; continuing with the oldest records available (%s=false).", text, FAIL_ON_DATA_LOSS.name)
        self.result.lost.append(text)

    def _past_stated_end(self, iseq: int) -> None:
        """Kinesis listed the shard as closed at ``self.ending`` yet returned a record above it: the two answers
        contradict each other, and ending the shard there would skip that record and any after it, then record
        the shard as finished (``SHARD_END``, in the KCL lease table too). Data loss, named, not trusted."""
        self._loss(f"shard {self.shard_id} of stream {self.stream!r}: Kinesis listed the shard as closed with "
                   f"EndingSequenceNumber {self.ending}, but returned a record at sequence number {iseq} above it; "
                   "the shard is ended at its stated end, so that record and any after it are not read")

    def _passed_recorded_end(self, iseq: int) -> ShardReadResult:
        """A record after the recorded end arrived before the recorded end's own record: that one is gone."""
        self._loss(f"shard {self.shard_id} of stream {self.stream!r}: the record at the recorded end "
                   f"({self.recorded}) is no longer available (the next record is {iseq}): it was trimmed")
        return self._finish(self._recorded_end, STOP_RECORDED_END)

    def _check_recorded(self) -> None:
        rec = self._recorded_end
        if rec.type not in (AFTER_SEQUENCE_NUMBER, SHARD_END) and rec != self.start:
            raise errors.recorded_end_invalid(self.task, rec, self.shard_id)
        if self.start.is_shard_end and not rec.is_shard_end:
            raise self._exact_error("the read starts at SHARD_END")
        if (rec.type == AFTER_SEQUENCE_NUMBER and self.start.type in (AFTER_SEQUENCE_NUMBER, AT_SEQUENCE_NUMBER)
                and rec.sequence_order() < self.start.sequence_order()):
            raise self._exact_error("it lies before the start")

    def _exact_error(self, why: str) -> KinesisDataLossError:
        return errors.recorded_end_not_reached(
            f"task {self.task!r}: cannot re-read shard {self.shard_id} of stream {self.stream!r} from {self.start} "
            f"exactly to the end an earlier attempt recorded ({self.recorded}); reached {self.pos}", why,
            "" if self.ending is not None or not self._recorded_end.is_shard_end else
            ". (For a closed shard, pass its ending sequence number so SHARD_END can be recognised.)")
