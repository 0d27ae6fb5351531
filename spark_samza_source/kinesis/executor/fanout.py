"""Executor side of enhanced fan-out: read one shard through ``SubscribeToShard`` subscriptions instead of
``GetRecords`` polling, with the same rows, positions, stop rules and batch-end protocol.

:class:`SubscribedShardReader` is the polling reader (``reader.ShardReader``) with another source of records: the
record conversion, KPL de-aggregation, sub-sequence positions, data-loss checks, recorded ends and stop rules are
the polling reader's own, so a batch read with either strategy ends at the same kind of position and the offset
does not depend on ``consumerType``. What differs:

* **Start.** A subscription starts where polling would ask an iterator for (``reader.iterator_request``): a
  position after sequence S starts ``AT_SEQUENCE_NUMBER`` S, S itself skipped (trimmed data is detected as with
  polling; a KPL aggregate is resumed at its next sub-record).
* **Events.** Records arrive in ``SubscribeToShardEvent`` events, read on a helper thread so that waiting for the
  next event is bounded by the read's deadline (``maxFetchTimePerShard``, or the exact-read timeout); rows go to
  Spark after every event. ``MillisBehindLatest`` 0 is "caught up", as for a polling answer.
* **End of shard.** An event with a null ``ContinuationSequenceNumber`` (and ``ChildShards``) is the shard's end:
  the read records ``SHARD_END`` and the planner releases the children exactly as after polling.
* **Renewal.** A subscription that ends (AWS closes them after 5 minutes) or is cut is renewed from the position
  reached, which is the continuation sequence number of the last event read whole.
* **A second subscription.** AWS refuses a subscription to a shard within 5 seconds of another one by the same
  consumer (``ResourceInUseException``): a retried or speculative attempt meets the earlier attempt's. It is
  waited out within the read's time; a read that runs out of time ends where it stands (nothing read), and an
  exact read keeps waiting up to its exact timeout.
* **Parking.** Because of that rule, a read that subscribed anew every micro-batch cost each batch of a shard ~5 s.
  A read that ends without failing at a position the next one can start from (after a record; or its start, when
  it read nothing) leaves its subscription open in this process's registry (``parked_subscriptions``) with the rest
  of the event it stopped inside (``maxRecordsPerShard``, a recorded end, the ``Trigger.AvailableNow`` cut-off and
  KPL aggregates can stop a read mid-event). The next read of the shard by the same consumer in this process
  (Spark reuses Python workers) takes it if it starts exactly there, replays the rest of that event, then the
  queued ones, skipping what was consumed (nothing can be missing in between: the stream is continuous); a read
  starting elsewhere (a retry re-reading an exact range, a startpoint) closes it and subscribes, and so do exact,
  ``AvailableNow`` and closed-shard reads, for which a stale "caught up" would mean more than an early stop
  (``_may_resume``). A parked
  subscription that ended, was taken over by another process or was cut while it waited fails at its first event
  and is renewed as above. Events queued while parked may say "caught up" about a past moment: a read stops as
  caught up only at an event that no other queued event follows. A failed read closes its subscription.
* **Giving way.** Spark sends a shard's next task to whichever Python worker is idle first, often not the one that
  parked the shard's subscription; that read is refused as in use (the parked one was made less than 5 s ago). A
  micro-batch read refused before it subscribed itself ends at once where it stands (``subscription_in_use``), so
  the batch is not held and the parked subscription stays alive for a later batch; an exact read must reach its
  recorded end and an ``AvailableNow`` read that ends empty would end the trigger, so both wait the refusal out.

Why boto3's HTTP/1.1 ``subscribe_to_shard`` and not an HTTP/2 client: docs/architecture.md §8.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

from botocore.exceptions import ClientError, ResponseStreamingError
from urllib3.exceptions import HTTPError as Urllib3Error

from .. import errors
from ..calls import THROTTLING_CODES, UNREACHABLE, error_code, is_outage, unreachable
from ..positions import AFTER_SEQUENCE_NUMBER, AT_SEQUENCE_NUMBER, AT_TIMESTAMP, EVERY_SUB, TRIM_HORIZON, ShardPosition
from .parked_subscriptions import PARKED, ParkedSubscription
from .reader import STOP_CAUGHT_UP, STOP_MAX_FETCH_TIME, ShardRead, ShardReader, ShardReadSettings, _NotYet, _ShardGone

__all__ = ["SubscribedShardReader", "starting_position", "SUBSCRIPTION_EVENT"]

log = logging.getLogger(__name__)

SUBSCRIPTION_EVENT = "SubscribeToShardEvent"
IN_USE = "ResourceInUseException"
#: how a cut connection surfaces while the event stream is read: renewed like an endpoint that did not answer
CUT = (*UNREACHABLE, ResponseStreamingError, Urllib3Error, ConnectionError)
#: errors inside an event stream that AWS documents as transient: the subscription is renewed
_RENEWED_CODES = frozenset({"InternalFailureException"})
#: the stop of a micro-batch read that gave way to a subscription of the same consumer made less than 5 s ago
STOP_SUBSCRIPTION_IN_USE = "subscription_in_use"
_IN_USE_WAIT_S = 0.5  # between two tries of a subscription AWS refused as in use (its rule is 5 s)
_QUEUED_EVENTS = 4
#: how long a caught-up event waits for a next one already on its way: a parked subscription's queue holds events
#: sent while no read was there, and "caught up" in one of them is stale while later ones wait (the pump hands the
#: next one over within microseconds when the queue was full)
_FOLLOW_WAIT_S = 0.005
#: start positions a read that read nothing can park at: its subscription still stands exactly there (a LATEST one
#: would not: the next read's LATEST is later)
_RESTARTABLE = (TRIM_HORIZON, AT_TIMESTAMP, AT_SEQUENCE_NUMBER)


def starting_position(request: dict[str, Any]) -> dict[str, Any]:
    """``SubscribeToShard``'s ``StartingPosition`` for the ``GetShardIterator`` parameters of a position."""
    out = {"Type": request["ShardIteratorType"]}
    if "StartingSequenceNumber" in request:
        out["SequenceNumber"] = request["StartingSequenceNumber"]
    if "Timestamp" in request:
        out["Timestamp"] = request["Timestamp"]
    return out


class _Ended(Exception):
    """The subscription's event stream ended (AWS's 5-minute limit): renew it."""


class _Events:
    """The events of one subscription, pumped by a daemon thread into a small queue, so that the reader waits for
    the next one at most until its deadline (a blocked socket read cannot be interrupted otherwise)."""

    _END = object()

    def __init__(self, event_stream: Any, name: str) -> None:
        self.stream = event_stream
        self.queue: queue.Queue = queue.Queue(maxsize=_QUEUED_EVENTS)
        self.closed = threading.Event()
        self._peeked: tuple | None = None  # taken from the queue by follows(), not yet by next()
        self.thread = threading.Thread(target=self._pump, name=name, daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        try:
            for event in self.stream:
                if not self._put((True, event)):
                    return
            self._put((True, self._END))
        except BaseException as err:  # handed to the reader, which decides
            self._put((False, err))

    def _put(self, item: tuple) -> bool:
        while not self.closed.is_set():
            try:
                self.queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def follows(self, wait_s: float) -> bool:
        """Whether another event is waiting, or comes within ``wait_s`` (the stream's end or an error: False)."""
        if self._peeked is None:
            try:
                self._peeked = self.queue.get(timeout=max(0.0, wait_s))
            except queue.Empty:
                return False
        return not self.ended()

    def ended(self) -> bool:
        """Whether the stream's end or an error is already known to come next."""
        if self._peeked is None:
            return False
        ok, item = self._peeked
        return not ok or item is self._END

    def next(self, wait_s: float) -> dict[str, Any] | None:
        """The next event, None when none came within ``wait_s``; raises ``_Ended`` at the end of the stream and
        what the stream raised (an error event, a cut connection)."""
        if self._peeked is not None:
            (ok, item), self._peeked = self._peeked, None
        else:
            try:
                ok, item = self.queue.get(timeout=max(0.0, wait_s))
            except queue.Empty:
                return None
        if not ok:
            raise item
        if item is self._END:
            raise _Ended()
        return item

    def close(self) -> None:
        self.closed.set()
        try:
            self.stream.close()
        except Exception:  # noqa: BLE001 - closing a stream that already failed
            pass


class SubscribedShardReader(ShardReader):
    """The reader of one :class:`ShardRead` through subscriptions of consumer ``read.consumer_arn`` (see the module
    doc)."""

    def __init__(self, client: Any, read: ShardRead, settings: ShardReadSettings) -> None:
        super().__init__(client, read, settings)
        self.consumer_arn = read.consumer_arn
        self.subscriptions = 0  # SubscribeToShard calls that opened a subscription
        self.resumed = False  # whether the read went on with a subscription a previous read parked
        self.child_shards: list[str] = []
        # a subscription belongs to the client (endpoint, credentials) that opened it; clients are cached per process
        # and settings, so every read of a query in this process has the same one
        self._key = (client, self.consumer_arn, self.shard_id)
        self._kept: dict[str, Any] | None = None  # the parked read's partly consumed event, replayed first
        self._stopped_in: dict[str, Any] | None = None  # the event this read stopped inside
        self._events: _Events | None = None  # the subscription being read

    def describe(self) -> str:
        return (f"task {self.task!r}: shard {self.shard_id} of stream {self.stream!r} through stream consumer "
                f"{self.consumer_arn}")

    def _steps(self) -> Iterator[None]:
        if self._finished_before_reading():
            return
        self._retries = 0
        self._outage = self.calls.retry_clock()
        self._confirmations = 0
        events = self._take_parked()
        while True:
            if events is None:
                if self._out_of_time():
                    return
                events = self._subscribe()
                if events is None:
                    return
            try:
                yield from self._read_events(events)
            except _Ended:
                log.info("%s: the subscription ended; renewing it from %s", self.describe(), self.pos)
                events.close()
                events = None
                continue
            except (*CUT, ClientError) as err:
                events.close()
                events = None
                if self._after_failure(err):
                    return
                continue
            except BaseException:  # a failed read (or a consumer that stopped early) leaves nothing open
                events.close()
                raise
            self._park_or_close(events)
            return

    def _read_events(self, events: _Events) -> Iterator[None]:
        """Read the event kept by the read that parked the subscription (if any), then events until the read stops
        (or the deadline passes: finished there)."""
        self._events = events
        kept, self._kept = self._kept, None
        if kept is not None:
            if self._on_event(kept):
                return
            yield
        while True:
            wait = self.deadline - time.monotonic()
            event = events.next(wait) if wait > 0 else None
            if event is None:
                if self._out_of_time():
                    return
                continue
            if self._on_event(event.get(SUBSCRIPTION_EVENT)):
                return
            yield

    def _on_event(self, event: dict[str, Any] | None) -> bool:
        """Consume one ``SubscribeToShardEvent``; True when the read stops here."""
        if event is None:  # an event type this reader does not know: nothing to read in it
            return False
        self._retries = 0
        self._outage.ok()
        self.result.calls += 1
        behind = self.result.millis_behind_latest = event.get("MillisBehindLatest")
        if self._consume(event.get("Records") or []) is not None:
            self._stopped_in = event  # part of it may be left for the next read (parking)
            return True
        if event.get("ContinuationSequenceNumber") is None:  # AWS: the shard is closed and read to its end
            self.child_shards = [c.get("ShardId") for c in event.get("ChildShards") or []]
            log.info("%s: read to its end; child shards %s", self.describe(), self.child_shards)
            self._flush()
            self._shard_end()
            return True
        if behind != 0:
            self._confirmations = 0
            return False
        if self._events is not None and self._events.follows(_FOLLOW_WAIT_S):
            return False  # caught up when it was sent, but later events are waiting: not caught up now
        self._confirmations += 1
        return self._stopped_caught_up(self._confirmations)

    def _exact_error(self, why: str):
        err = super()._exact_error(why)
        return type(err)(f"{err} (reading through stream consumer {self.consumer_arn})")

    # ---- parking (see parked_subscriptions) --------------------------------------------------------------------
    def _take_parked(self) -> _Events | None:
        """The subscription a previous read of this shard parked in this process, when it ended exactly where
        this read starts; None otherwise (a parked one that does not continue this read is closed)."""
        parked = PARKED.take(self._key)
        if parked is None:
            return None
        if parked.end != self.start or not self._may_resume():
            # a retry re-reading an exact range, a startpoint, a moved position; or a read that must not go on
            log.info("%s: a subscription parked at %s does not serve this read from %s: closed, subscribing anew",
                     self.describe(), parked.end, self.start)
            parked.events.close()
            return None
        log.debug("%s: going on with the subscription parked at %s (%d kept records)", self.describe(), parked.end,
                  len(parked.kept["Records"]) if parked.kept else 0)
        self.resumed = True
        # the subscription is continuous: every record up to the end was consumed, nothing can be missing between
        self.expect = parked.expect if parked.expect is not None else _resumed_expect(parked.end)
        self._kept = parked.kept
        return parked.events

    def _may_resume(self) -> bool:
        """Whether this read may go on with a parked subscription. Its queued events were sent while no read was
        there, so "caught up" in them may be about the past, and a read cannot always tell the last of them from
        a new one (they wait on the connection as well as in the queue). A micro-batch read that stops on such an
        event only stops early. But a caught-up event ends a closed shard (``SHARD_END``: records put before it
        closed would be lost), ends an ``AvailableNow`` trigger when the batch read nothing, and makes an exact read
        doubt that its recorded end exists: those reads subscribe anew, as every read did before parking."""
        return not self.exact and self.ending is None and self.until_arrival_ms is None

    def _park_or_close(self, events: _Events) -> None:
        """After a read that ended without failing: park its subscription when the next read of the shard can go
        on from its end (a concrete position, or the start itself when nothing was read), close it otherwise."""
        end = self.result.end
        resumable = end.type == AFTER_SEQUENCE_NUMBER or (end == self.start and end.type in _RESTARTABLE)
        if not resumable or events.ended():  # an ended one: the next read subscribes anyway
            events.close()
            return
        kept = _unconsumed(self._stopped_in, end) if self._stopped_in is not None else None
        PARKED.park(self._key, ParkedSubscription(events, end, kept, self.expect, self.describe()))

    # ---- subscribing ------------------------------------------------------------------------------------------
    def _subscribe(self) -> _Events | None:
        """A subscription from the position reached (None when the read ended without one)."""
        pos = self.pos
        while True:
            if pos.is_shard_end:
                self._shard_end()
                return None
            what = f"{self.describe()}: SubscribeToShard at {pos}"
            position = self._start_request(pos)
            try:
                response = self.client.subscribe_to_shard(ConsumerARN=self.consumer_arn, ShardId=self.shard_id,
                                                          StartingPosition=starting_position(position))
            except (*UNREACHABLE, ClientError) as err:
                if error_code(err) == "InvalidArgumentException" or (
                        error_code(err) == "ResourceNotFoundException" and not _names_consumer(err)):
                    try:
                        pos = self._start_refused(err, pos, what)
                        continue
                    except _NotYet:
                        self._not_yet(err)
                        return None
                if self._after_failure(err) or self._out_of_time():
                    return None
                continue
            self.subscriptions += 1
            return _Events(response["EventStream"], f"subscription-{self.shard_id}")

    def _not_yet(self, err: ClientError) -> None:
        if self.exact:
            raise self._exact_error(f"Kinesis refuses the start as later than its clock: {self.scrub(err)}")
        self._finish(self.pos, STOP_CAUGHT_UP)

    def _after_failure(self, err: BaseException) -> bool:
        """Wait out a failed subscription or a failure inside its stream; True when the read ended (finished at
        its deadline); raises when the failure is not one to wait out."""
        code = error_code(err)
        if code == IN_USE:  # another subscription to this shard: AWS lets a new one take over soon
            if self._yields_in_use():
                return True
            return self._wait(_IN_USE_WAIT_S)
        if isinstance(err, CUT) or is_outage(err) or code in _RENEWED_CODES:
            if self._outage.retry():
                log.info("%s: the subscription failed (%s); renewing it from %s", self.describe(),
                         type(err).__name__, self.pos)
                return False
            raise unreachable(f"{self.describe()}: SubscribeToShard at {self.pos}", self.calls.where(), err,
                              self.scrub, self._outage) from None
        if code == "ResourceNotFoundException" and not _names_consumer(err):
            raise _ShardGone(err) from None
        self._retries += 1
        self.result.retries += 1
        if code in THROTTLING_CODES and self._retries <= self.max_retries:
            self._backoff(self._retries)
            return self._out_of_time()
        if code in THROTTLING_CODES:
            raise errors.kept_throttled(f"{self.describe()}: SubscribeToShard at {self.pos}", code, self.max_retries,
                                        self.calls.where()) from None
        hint = (" (was the consumer deregistered? restarting the query registers it again)"
                if code == "ResourceNotFoundException" else "")
        raise errors.operation_failed(f"{self.describe()}: SubscribeToShard at {self.pos}", self.calls.where(),
                                      self.scrub(err), hint) from None

    def _yields_in_use(self) -> bool:
        """A refusal as in use means this consumer subscribed to the shard less than 5 s ago: most often a read of
        the previous batch that parked its subscription in another Python worker (Spark does not send a task to
        the worker that ran it last time). A micro-batch read then ends where it stands, so that the batch is not
        held up to 5 s and the subscription parked elsewhere stays alive for the next batch; True when it did.
        A read that subscribed itself (renewing a subscription that ended or was cut) was refused because of its
        own call; an exact read must reach its recorded end, and an ``AvailableNow`` read that ends with nothing
        would end the trigger: they wait the refusal out."""
        if self.subscriptions or self.exact or self.until_arrival_ms is not None:
            return False
        log.info("%s: another subscription of this consumer to the shard was made less than 5 s ago (parked by "
                 "another Python worker, or another attempt's); this read ends at %s, the next batch reads on",
                 self.describe(), self.pos)
        self._finish(self.pos, STOP_SUBSCRIPTION_IN_USE)
        return True

    def _wait(self, seconds: float) -> bool:
        """Sleep, never past a bounded read's deadline; True when the read finished there."""
        if not self.exact:
            seconds = min(seconds, max(0.0, self.deadline - time.monotonic()))
        if seconds > 0:
            self.sleep(seconds)
        if not self.exact and time.monotonic() >= self.deadline:
            self._finish(self.pos, STOP_MAX_FETCH_TIME)
            return True
        return False


def _resumed_expect(end: ShardPosition) -> tuple[int, int, bool] | None:
    """The reader's ``expect`` for a read going on from ``end`` on the subscription that reached it: records up to
    the consumed part of ``end``'s record are skipped; a later first record is no loss (the stream is continuous,
    and the kept event may well not hold ``end``'s record)."""
    if end.type != AFTER_SEQUENCE_NUMBER:
        return None
    return end.sequence_order()[0], EVERY_SUB if end.sub < 0 else end.sub, False


def _unconsumed(event: dict[str, Any], end: ShardPosition) -> dict[str, Any] | None:
    """``event`` with only the records a read that stopped inside it at ``end`` did not consume whole (a record
    read in part, a KPL aggregate, stays: the next read skips its consumed sub-records); None when none is left."""
    records = event.get("Records") or []
    if end.type == AFTER_SEQUENCE_NUMBER:
        last, whole = end.sequence_order()[0], end.sub < 0
        records = [r for r in records if int(r["SequenceNumber"]) > last
                   or (not whole and int(r["SequenceNumber"]) == last)]
    if not records and event.get("ContinuationSequenceNumber") is not None:
        return None
    return {**event, "Records": records}


def _names_consumer(err: BaseException) -> bool:
    """Whether a ResourceNotFoundException is about the stream consumer (deregistered), not the shard."""
    return "consumer" in str(err).lower()

