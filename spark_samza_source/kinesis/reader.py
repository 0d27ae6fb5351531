"""Executor side of ``samza-kinesis``: read one shard from a position, as Arrow RecordBatches, and say where it ended.

Called by ``batch_ends`` for each shard of a task. :func:`stream_shard` reads from ``start`` until the first stop
condition (``recorded_end`` reached exactly, ``max_records`` user records, ``max_fetch_time_ms``, caught up, or
shard end), handing out rows as they are read, then reports the end; :func:`read_shard` returns all rows at once.
A retried or speculative attempt passes the recorded end back and gets exactly the same rows.

Bounded robustness: throttling retried with exponential backoff, expired iterators renewed from the position
reached, at most one ``GetRecords`` per 200 ms per shard. Trimmed data is detected (a position after S resumes
AT_SEQUENCE_NUMBER S) and fails with :class:`KinesisDataLossError` unless ``fail_on_data_loss`` is off. KPL
aggregates are de-aggregated (``kpl``). The read protocol and its reasons: docs/architecture.md §8.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from botocore.exceptions import ClientError

from ..spec.common import FAIL_ON_DATA_LOSS_OPTION
from . import kpl
from .calls import (
    THROTTLING_CODES,
    UNREACHABLE,
    KinesisCalls,
    ThrottledAtDeadline,
    error_code,
    is_outage,
    iterator_request,
    unreachable,
)
from .client import AwsClientSettings
from .errors import KinesisDataLossError, KinesisSourceError, KinesisThrottledError
from .options import DEFAULT_MAX_FETCH_TIME_MS, DEFAULT_MAX_RECORDS_PER_SHARD
from .positions import AFTER_SEQUENCE_NUMBER, AT_SEQUENCE_NUMBER, AT_TIMESTAMP, EVERY_SUB, SHARD_END, ShardPosition
from .schema import kinesis_arrow_schema

__all__ = [
    "ShardReadResult",
    "read_shard",
    "stream_shard",
    "ShardStream",
    "DEFAULT_MAX_RECORDS",
    "DEFAULT_MAX_FETCH_TIME_MS",
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

DEFAULT_MAX_RECORDS = DEFAULT_MAX_RECORDS_PER_SHARD
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


def _arrival_ms(record: dict[str, Any]) -> int:
    arrival = record.get("ApproximateArrivalTimestamp")
    if arrival is None:
        return -1
    return int(arrival.timestamp() * 1000) if hasattr(arrival, "timestamp") else int(arrival)


@dataclass
class ShardReadResult:
    """What :func:`read_shard` read: the rows (``batches``, schema ``kinesis_arrow_schema()``) and where it ended.

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


def stream_shard(
    client: Any,
    stream: str,
    shard_id: str,
    start: ShardPosition,
    *,
    task: str,
    ending_sequence: str | None = None,
    recorded_end: ShardPosition | None = None,
    max_records: int = DEFAULT_MAX_RECORDS,
    max_fetch_time_ms: int = DEFAULT_MAX_FETCH_TIME_MS,
    fail_on_data_loss: bool = True,
    hash_range: tuple[int, int] | None = None,
    records_per_call: int = DEFAULT_RECORDS_PER_CALL,
    max_rows_per_batch: int = DEFAULT_MAX_ROWS_PER_BATCH,
    min_call_interval_ms: int = DEFAULT_MIN_CALL_INTERVAL_MS,
    max_retries: int = DEFAULT_MAX_RETRIES,
    exact_timeout_ms: int = DEFAULT_EXACT_TIMEOUT_MS,
    settings: AwsClientSettings | None = None,
    sleep: Callable[[float], None] = time.sleep,
    until_arrival_ms: int | None = None,
) -> ShardStream:
    """A reader of shard ``shard_id`` of ``stream`` from ``start`` (see the module documentation for the stop rules).

    Iterate it to get the rows as Arrow batches while they are read (one or more per ``GetRecords`` response);
    once it is exhausted, ``.result`` says where the read ended (its ``batches`` stay empty); ``.run()`` instead
    reads everything and returns the result with its batches.

    ``client`` is a boto3 Kinesis client (``client.kinesis_client``).  ``ending_sequence`` is the shard's
    ``EndingSequenceNumber`` when it is closed (``ShardInfo.ending_sequence``).  ``recorded_end`` makes the read
    exact (a retried / speculative attempt).  ``task`` fills the ``task`` column; ``settings`` only serve to scrub
    credentials out of error texts.  ``until_arrival_ms`` (``Trigger.AvailableNow``) stops before the first record
    that arrived after that time, so the trigger reads what was there when it started.
    """
    if max_records < 1 or records_per_call < 1 or max_rows_per_batch < 1 or max_fetch_time_ms < 0:
        raise ValueError("max_records, records_per_call and max_rows_per_batch must be >= 1, "
                         "max_fetch_time_ms >= 0")
    reader = ShardStream(client, stream, shard_id, start, task, ending_sequence, recorded_end, max_records,
                         max_fetch_time_ms, fail_on_data_loss, hash_range, min(records_per_call, 10_000),
                         max_rows_per_batch, min_call_interval_ms, max_retries, exact_timeout_ms, settings, sleep)
    reader.until_arrival_ms = None if recorded_end is not None else until_arrival_ms
    return reader


def read_shard(client: Any, stream: str, shard_id: str, start: ShardPosition, **options: Any) -> ShardReadResult:
    """Read shard ``shard_id`` of ``stream`` from ``start`` (see the module documentation for the stop rules).

    The options are :func:`stream_shard`'s; the result holds every row (``batches``) and where the read ended.
    """
    return stream_shard(client, stream, shard_id, start, **options).run()


class _NotYet(Exception):
    """Kinesis refused an ``AT_TIMESTAMP`` later than its clock: nothing to read yet."""


class _ShardGone(Exception):
    def __init__(self, err: BaseException) -> None:
        super().__init__(str(err))
        self.err = err


class ShardStream:
    """One read of one shard (built by :func:`stream_shard`): iterate for the rows, then look at ``result``."""

    until_arrival_ms: int | None = None

    def __init__(self, client, stream, shard_id, start, task, ending_sequence, recorded_end, max_records,
                 max_fetch_time_ms, fail_on_data_loss, hash_range, records_per_call, max_rows_per_batch,
                 min_call_interval_ms, max_retries, exact_timeout_ms, settings, sleep) -> None:
        self.client = client
        self.calls = KinesisCalls(client, settings=settings, max_retries=max_retries, sleep=sleep)
        self.scrub = settings.scrub if settings is not None else (lambda t: str(t)[:1000])
        self.stream = stream
        self.shard_id = shard_id
        self.start = start
        self.task = task
        self.ending = int(ending_sequence) if ending_sequence is not None else None
        self.recorded = recorded_end
        self.exact = recorded_end is not None
        self.max_records = max_records
        self.fail_on_data_loss = fail_on_data_loss
        self.hash_range = hash_range
        self.limit = records_per_call
        self.max_rows = max_rows_per_batch
        self.interval_s = max(0, min_call_interval_ms) / 1000.0
        self.max_retries = max_retries
        self.sleep = sleep
        now = time.monotonic()
        self.deadline = now + (exact_timeout_ms if self.exact else max_fetch_time_ms) / 1000.0
        self.last_call = -1e9
        self.schema = kinesis_arrow_schema()
        self.result = ShardReadResult(stream, shard_id, start, start, "")
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
        """The read loop; pauses (yields) after each response so that its rows can be handed out."""
        res = self.result
        if self.exact:
            self._check_recorded()
            if self.recorded == self.start:
                return self._finish(self.start, STOP_RECORDED_END)
        if self.start.is_shard_end:
            return self._finish(self.start, STOP_SHARD_END)
        if (not self.exact and self.ending is not None and self.start.type == AFTER_SEQUENCE_NUMBER
                and self.start.sub < 0 and int(self.start.sequence) >= self.ending):
            return self._finish(ShardPosition.shard_end(), STOP_SHARD_END)
        try:
            iterator = self._acquire(self.pos)
        except ThrottledAtDeadline:
            return self._finish(self.pos, STOP_MAX_FETCH_TIME)
        except _NotYet as err:
            if self.exact:
                why = f"Kinesis refuses the start as later than its clock: {self.scrub(err)}"
                raise self._exact_error(why) from None
            log.info("task %r: shard %s of %s: %s is later than Kinesis' clock; nothing to read yet", self.task,
                     self.shard_id, self.stream, self.pos)
            return self._finish(self.pos, STOP_CAUGHT_UP)
        retries = 0
        confirmations = 0
        outage = self.calls.retry_clock()
        while True:
            if iterator is None:  # real Kinesis: a closed shard read to its end
                return self._shard_end()
            if time.monotonic() >= self.deadline:
                if self.exact:
                    raise self._exact_error("it was not reached within exact_timeout_ms (throttled, or the "
                                            "shard is not draining?)")
                return self._finish(self.pos, STOP_MAX_FETCH_TIME)
            limit = self.limit if self.exact else min(self.limit, max(1, self.max_records - res.records))
            if self.expect is not None and not self.exact:
                if limit == self.limit == self.max_records - res.records and self.limit > 1:
                    # the resumed-at record (skipped) takes one place of a full page: stop one row short rather
                    # than spend a second call (and up to 200 ms of pacing) on the last row; max_records is a cap
                    self.max_records -= 1
                else:
                    limit = min(self.limit, limit + 1)  # the resumed-at record is skipped: ask for one more
            self._pace()
            try:
                resp = self.client.get_records(ShardIterator=iterator, Limit=limit)
            except (*UNREACHABLE, ClientError) as err:
                if is_outage(err):
                    if outage.retry():  # the same iterator again (an expired one is renewed below)
                        continue
                    raise unreachable(f"task {self.task!r}: GetRecords on shard {self.shard_id} of stream "
                                      f"{self.stream!r} at {self.pos}", self.calls.where(), err, self.scrub,
                                      outage) from None
                code = error_code(err)
                retries += 1
                res.retries += 1
                if code not in THROTTLING_CODES and code != "ExpiredIteratorException":
                    if code == "ResourceNotFoundException":
                        raise _ShardGone(err) from None
                    raise KinesisSourceError(
                        f"task {self.task!r}: GetRecords on shard {self.shard_id} of stream {self.stream!r} at "
                        f"{self.pos} failed ({self.calls.where()}): {self.scrub(err)}") from None
                if retries > self.max_retries:
                    raise KinesisThrottledError(
                        f"task {self.task!r}: GetRecords on shard {self.shard_id} of stream {self.stream!r} at "
                        f"{self.pos} kept failing with {code} ({self.max_retries} retries, "
                        f"{self.calls.where()}); another consumer may be using the shard's 5 reads/s or "
                        "2 MB/s") from None
                if code == "ExpiredIteratorException":
                    try:
                        iterator = self._acquire(self.pos)
                    except ThrottledAtDeadline:
                        return self._finish(self.pos, STOP_MAX_FETCH_TIME)
                    except _NotYet:
                        return self._finish(self.pos, STOP_CAUGHT_UP)
                else:
                    self._backoff(retries)
                continue
            retries = 0
            outage.ok()
            res.calls += 1
            records = resp.get("Records", [])
            behind = resp.get("MillisBehindLatest")
            res.millis_behind_latest = behind
            stop = self._consume(records)
            if stop is not None:
                return stop
            yield
            iterator = resp.get("NextShardIterator")
            if iterator is not None and behind == 0 and len(records) < limit:  # caught up
                if self.ending is not None:  # closed shard: nothing will ever follow
                    return self._shard_end()
                if not self.exact:
                    return self._finish(self.pos, STOP_CAUGHT_UP)
                confirmations += 1
                if confirmations >= _CAUGHT_UP_CONFIRMATIONS:
                    raise self._exact_error("the shard holds no more records (caught up), so it lies beyond the "
                                            "data that exists now (stream re-created?)")
            else:
                confirmations = 0

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
        cols = self._cols
        data_col, pk_col, seq_col, sub_col, ts_col = cols
        for record in records:
            seq = record["SequenceNumber"]
            iseq = int(seq)
            skip_to = -1  # sub-records 0..skip_to were consumed earlier
            if self.expect is not None:
                exp_seq, exp_sub, loss_if_missing = self.expect
                if iseq < exp_seq:  # before our position (never from Kinesis): already consumed
                    continue
                self.expect = None
                if iseq == exp_seq:
                    skip_to = exp_sub
                elif iseq > exp_seq and loss_if_missing:
                    self._data_loss(exp_seq, iseq)
            if self.ending is not None and iseq > self.ending:  # never past the shard's end (moto keeps writing)
                return self._shard_end()
            if self.recorded_key is not None and iseq > self.recorded_key[0]:
                return self._passed_recorded_end(iseq)
            if self.until_arrival_ms is not None and _arrival_ms(record) > self.until_arrival_ms:
                return self._finish(self.pos, STOP_ARRIVED_LATER)
            res.kinesis_records += 1
            users = kpl.deaggregate_tuples(record["Data"])
            if users is None:
                subs: list[tuple] = [(record["PartitionKey"], record["Data"])]
            else:
                if self.hash_range is not None and users and not self._in_range(users):
                    users = []
                subs = users
            first = 0 if skip_to < 0 else min(len(subs), skip_to + 1)
            stop_at = len(subs)  # exclusive
            exact_here = self.recorded_key is not None and iseq == self.recorded_key[0]
            if exact_here:
                stop_at = min(stop_at, self.recorded_key[1] + 1)
            elif not self.exact:
                stop_at = min(stop_at, first + self.max_records - res.records)
            if stop_at > first:
                arrival = record.get("ApproximateArrivalTimestamp")
                if users is None:
                    data_col.append(record["Data"])
                    pk_col.append(record["PartitionKey"])
                    seq_col.append(seq)
                    sub_col.append(0)
                    ts_col.append(arrival)
                else:
                    for i in range(first, stop_at):
                        pk, data, _ = subs[i]
                        data_col.append(data)
                        pk_col.append(pk)
                        seq_col.append(seq)
                        sub_col.append(i)
                        ts_col.append(arrival)
                res.records += stop_at - first
                if len(data_col) >= self.max_rows:
                    self._flush()
            whole = stop_at >= len(subs)
            self._last_read = (seq, -1 if whole else stop_at - 1)  # a position object only when asked (pos)
            if exact_here:
                return self._finish(self.recorded, STOP_RECORDED_END)
            if whole and self.ending is not None and iseq >= self.ending:
                return self._shard_end()
            if not self.exact and res.records >= self.max_records:
                return self._finish(self.pos, STOP_MAX_RECORDS)
        return None

    def _in_range(self, users: list[tuple[str, bytes, str | None]]) -> bool:
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
        request = iterator_request(pos, at_for_after=True)
        assert request is not None
        if pos.type == AFTER_SEQUENCE_NUMBER:
            self.expect = (int(pos.sequence), _ALL if pos.sub < 0 else pos.sub, True)
        else:
            self.expect = None
        what = f"task {self.task!r}: GetShardIterator for shard {self.shard_id} of stream {self.stream!r} at {pos}"
        try:
            resp = self.calls.call(what, self.client.get_shard_iterator, StreamName=self.stream,
                                   ShardId=self.shard_id, deadline=None if self.exact else self.deadline, **request)
        except ClientError as err:
            code = error_code(err)
            if code == "ResourceNotFoundException":
                raise _ShardGone(err) from None
            if code == "InvalidArgumentException" and pos.type == AT_TIMESTAMP and "currentTimestamp" in str(err):
                # Kinesis' clock has not reached the timestamp yet (AWS refuses a future AT_TIMESTAMP; the driver
                # resolved LATEST or a startpoint by its own clock): nothing at or after it exists yet
                raise _NotYet(err) from None
            if code == "InvalidArgumentException" and pos.type == AFTER_SEQUENCE_NUMBER:
                # Kinesis may refuse a sequence number older than the trim horizon: resume at the oldest record
                self._data_loss(int(pos.sequence), None, detail=f"Kinesis refused the position: {self.scrub(err)}")
                self.expect = None
                return self._acquire(ShardPosition.trim_horizon())
            raise KinesisSourceError(f"{what} failed ({self.calls.where()}): {self.scrub(err)}") from None
        return resp.get("ShardIterator")

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
        if self.exact and not self.recorded.is_shard_end:
            raise self._exact_error("the shard ended before it")
        return self._finish(ShardPosition.shard_end(), STOP_RECORDED_END if self.exact else STOP_SHARD_END)

    def _gone(self, err: BaseException) -> ShardReadResult:
        what = (f"shard {self.shard_id} of stream {self.stream!r} no longer exists ({self.calls.where()}): it "
                f"expired (closed shards disappear after the retention period) or the stream was deleted, while "
                f"records from {self.pos} on were still to be read. Kinesis said: {self.scrub(err)}")
        self._loss(what)
        if self.exact:
            return self._finish(self.recorded, STOP_RECORDED_END)
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
            raise KinesisDataLossError(text + f". Set the option '{FAIL_ON_DATA_LOSS_OPTION}' to 'false' to skip lost "
                                              "records with a warning instead.")
        log.warning("%s; continuing with the oldest records available (%s=false).", text, FAIL_ON_DATA_LOSS_OPTION)
        self.result.lost.append(text)

    def _passed_recorded_end(self, iseq: int) -> ShardReadResult:
        """A record after the recorded end arrived before the recorded end's own record: that one is gone."""
        self._loss(f"shard {self.shard_id} of stream {self.stream!r}: the record at the recorded end "
                   f"({self.recorded}) is no longer available (the next record is {iseq}): it was trimmed")
        return self._finish(self.recorded, STOP_RECORDED_END)

    def _check_recorded(self) -> None:
        rec = self.recorded
        if rec.type not in (AFTER_SEQUENCE_NUMBER, SHARD_END) and rec != self.start:
            raise KinesisSourceError(f"task {self.task!r}: a recorded batch end must be AFTER_SEQUENCE_NUMBER or "
                                     f"SHARD_END (or the start itself), got {rec} for shard {self.shard_id}")
        if self.start.is_shard_end and not rec.is_shard_end:
            raise self._exact_error("the read starts at SHARD_END")
        if (rec.type == AFTER_SEQUENCE_NUMBER and self.start.type in (AFTER_SEQUENCE_NUMBER, AT_SEQUENCE_NUMBER)
                and rec.sequence_order() < self.start.sequence_order()):
            raise self._exact_error("it lies before the start")

    def _exact_error(self, why: str) -> KinesisDataLossError:
        return KinesisDataLossError(
            f"task {self.task!r}: cannot re-read shard {self.shard_id} of stream {self.stream!r} from {self.start} "
            f"exactly to the end an earlier attempt recorded ({self.recorded}); reached {self.pos}: {why}"
            + ("" if self.ending is not None or not self.recorded.is_shard_end else
               ". (For a closed shard, pass its ending sequence number so SHARD_END can be recognised.)"))
