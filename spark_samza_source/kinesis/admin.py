"""Kinesis metadata and iterators through boto3: shard lineage (``ListShards``), iterators for positions, probes.

Used on the driver (shard discovery, "is there anything to read?" probes) and by the executors' reader (iterators).
Rules, as in the Kafka admin:

* **Bounded.** Kinesis clients make one attempt per call (``client``); throttling (``LimitExceededException``,
  ``ProvisionedThroughputExceededException``) is retried here with exponential backoff for at most ``max_retries``
  attempts, then a :class:`KinesisThrottledError` names the operation and stream. An endpoint that does not answer
  (connection refused, reset or timed out; HTTP 5xx) is retried with backoff for up to ``retry_timeout_s`` (option
  ``endpoint.retryTimeout``, :class:`RetryClock`), then a :class:`KinesisSourceError` names the endpoint, how
  long and how often it was tried, and the option.
* **Clear errors.** A missing stream or shard raises :class:`KinesisStreamNotFoundError` naming the stream (and
  shard) and where it was looked for (region, endpoint).  Texts from botocore go through ``scrub`` so a credential
  can never leak into a message.
* **No I/O in the constructor.**

``ListShards`` pagination: AWS requires ``NextToken`` *without* ``StreamName`` on follow-up pages.  moto 5.2
rejects that (``InvalidToken``: it checksums the parameters of the first request); on that error the page is
requested again with both, which moto accepts and AWS never needs.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from botocore.exceptions import ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from . import kpl
from .client import AwsClientSettings, client_where
from .errors import KinesisSourceError, KinesisStreamNotFoundError, KinesisThrottledError
from .options import RETRY_TIMEOUT_OPTION
from .positions import (
    AFTER_SEQUENCE_NUMBER,
    AT_SEQUENCE_NUMBER,
    AT_TIMESTAMP,
    SHARD_END,
    TRIM_HORIZON,
    ShardPosition,
)
from .shards import ShardInfo

__all__ = ["KinesisAdmin", "RetryClock", "THROTTLING_CODES", "UNREACHABLE", "error_code", "is_outage",
           "iterator_request", "unreachable"]

#: botocore's "no answer" errors (connection refused / reset / closed, timeouts), raised after its own retries
UNREACHABLE = (BotoConnectionError, HTTPClientError)

log = logging.getLogger(__name__)

T = TypeVar("T")

#: error codes meaning "slow down"; retried with backoff (KMS throttling included: encrypted streams)
THROTTLING_CODES = frozenset({
    "ProvisionedThroughputExceededException", "LimitExceededException", "ThrottlingException",
    "KMSThrottlingException", "RequestLimitExceeded",
})
_LIST_PAGE = 1000  # AWS default page size (maximum 10000)
_PROBE_CALLS = 5


def unreachable(what: str, where: str, err: BaseException, scrub: Callable[[object], str],
                clock: RetryClock | None = None) -> KinesisSourceError:
    """The error for an AWS endpoint that did not answer: what was asked, of which endpoint, for how long, and
    botocore's words (scrubbed of credentials)."""
    tried = ""
    if clock is not None:
        tried = (f" for {clock.elapsed_s():.1f} s ({clock.attempts} attempts; option '{RETRY_TIMEOUT_OPTION}' is "
                 f"{clock.timeout_s:g} s)")
    return KinesisSourceError(f"{what}: no answer from the Kinesis endpoint ({where}){tried}: {scrub(err)}. "
                              f"Check that the endpoint is reachable from this machine, or raise the option "
                              f"'{RETRY_TIMEOUT_OPTION}' to ride out longer outages")


def error_code(err: BaseException) -> str:
    if isinstance(err, ClientError):
        return str(err.response.get("Error", {}).get("Code", ""))
    return ""


_SERVER_ERROR_CODES = frozenset({"InternalFailure", "InternalServerError", "ServiceUnavailable", "InternalError"})


def is_outage(err: BaseException) -> bool:
    """No usable answer from the endpoint: no connection, a reset or timeout, or an HTTP 5xx (AWS's own advice is
    to retry those)."""
    if isinstance(err, UNREACHABLE):
        return True
    if isinstance(err, ClientError):
        status = err.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        return error_code(err) in _SERVER_ERROR_CODES or (isinstance(status, int) and status >= 500)
    return False


class RetryClock:
    """How long an endpoint has gone without answering: ``retry(err)`` sleeps (backoff with jitter, never past the
    deadline) and returns True while ``timeout_s`` has not run out since the first failure, False after; ``ok()``
    after an answer starts afresh. Counted in attempts, so tests need no clock."""

    def __init__(self, timeout_s: float, *, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic, base_s: float = 0.2, max_s: float = 5.0) -> None:
        self.timeout_s = timeout_s
        self.sleep = sleep
        self.clock = clock
        self.base_s = base_s
        self.max_s = max_s
        self.since: float | None = None
        self.attempts = 0

    def ok(self) -> None:
        self.since = None
        self.attempts = 0

    def elapsed_s(self) -> float:
        return 0.0 if self.since is None else self.clock() - self.since

    def retry(self) -> bool:
        now = self.clock()
        if self.since is None:
            self.since = now
        self.attempts += 1
        left = self.since + self.timeout_s - now
        if left <= 0:
            return False
        delay = random.uniform(0.5, 1.0) * min(self.max_s, self.base_s * (2 ** min(self.attempts - 1, 16)))
        self.sleep(min(delay, left))
        return True


def iterator_request(position: ShardPosition, *, at_for_after: bool = False) -> dict[str, Any] | None:
    """``GetShardIterator`` parameters (type, sequence or timestamp) for ``position``; None for SHARD_END.

    ``AFTER_SEQUENCE_NUMBER`` with ``sub >= 0`` (inside a KPL aggregate) starts *at* that record: the reader then
    skips its sub-records ``0..sub``.  ``at_for_after=True`` does the same for ``sub = -1`` (the reader skips the
    whole record), which lets it check that the record it resumes after still exists (trimmed data detection).
    """
    if position.type == SHARD_END:
        return None
    if position.type == TRIM_HORIZON:
        return {"ShardIteratorType": TRIM_HORIZON}
    if position.type == AT_TIMESTAMP:
        assert position.timestamp_ms is not None
        return {"ShardIteratorType": AT_TIMESTAMP,
                "Timestamp": datetime.fromtimestamp(position.timestamp_ms / 1000.0, tz=UTC)}
    if position.type == AT_SEQUENCE_NUMBER or (position.type == AFTER_SEQUENCE_NUMBER
                                               and (position.sub >= 0 or at_for_after)):
        return {"ShardIteratorType": AT_SEQUENCE_NUMBER, "StartingSequenceNumber": position.sequence}
    return {"ShardIteratorType": AFTER_SEQUENCE_NUMBER, "StartingSequenceNumber": position.sequence}


class KinesisAdmin:
    """Metadata operations against one Kinesis endpoint through a boto3 client (see ``client.kinesis_client``)."""

    def __init__(self, client: Any, *, settings: AwsClientSettings | None = None, max_retries: int = 8,
                 backoff_base_s: float = 0.1, backoff_max_s: float = 5.0,
                 retry_timeout_s: float | None = None) -> None:
        self.client = client
        self.retry_timeout_s = (retry_timeout_s if retry_timeout_s is not None
                                else settings.retry_timeout_s if settings is not None else 60.0)
        self._scrub: Callable[[object], str] = settings.scrub if settings is not None else (lambda t: str(t)[:1000])
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s

    # ---- plumbing -------------------------------------------------------------------------------------------
    def where(self) -> str:
        return client_where(self.client)

    def backoff_s(self, attempt: int) -> float:
        """Exponential backoff with full jitter, capped: attempt 0 -> up to base, 1 -> 2*base ..."""
        return random.uniform(0.5, 1.0) * min(self.backoff_max_s, self.backoff_base_s * (2 ** attempt))

    def retry_clock(self) -> RetryClock:
        return RetryClock(self.retry_timeout_s)

    def _call(self, what: str, fn: Callable[..., T], **kwargs: Any) -> T:
        """``fn(**kwargs)`` with bounded retries on throttling and on an endpoint that does not answer."""
        outage = self.retry_clock()
        attempt = 0
        while True:
            try:
                return fn(**kwargs)
            except (*UNREACHABLE, ClientError) as err:
                if is_outage(err):
                    if outage.retry():
                        log.info("%s: no answer from %s (attempt %d), retrying", what, self.where(), outage.attempts)
                        continue
                    raise unreachable(what, self.where(), err, self._scrub, outage) from None
                if error_code(err) not in THROTTLING_CODES or attempt == self.max_retries:
                    if error_code(err) in THROTTLING_CODES:
                        raise KinesisThrottledError(
                            f"{what}: still throttled after {self.max_retries} retries ({self.where()}): "
                            f"{self._scrub(err)}") from None
                    raise
                time.sleep(self.backoff_s(attempt))
                attempt += 1

    def _not_found(self, stream: str, shard_id: str | None, err: BaseException) -> KinesisStreamNotFoundError:
        subject = f"shard {shard_id} of stream {stream!r}" if shard_id else f"stream {stream!r}"
        hint = ("the shard may have expired (closed shards disappear once the stream's retention period has passed)"
                if shard_id else "check the options 'streamName' and 'region' / 'endpointUrl'")
        return KinesisStreamNotFoundError(f"Kinesis {subject} not found ({self.where()}): {hint}. "
                                          f"Kinesis said: {self._scrub(err)}")

    # ---- shards ---------------------------------------------------------------------------------------------
    def list_shards(self, stream: str) -> list[ShardInfo]:
        """Every shard of ``stream`` that Kinesis still lists (open and closed within retention), sorted by id.

        Each ``ShardInfo`` carries its parents (``ParentShardId`` then ``AdjacentParentShardId``), hash-key range,
        starting sequence number and, for a closed shard, its ending sequence number.
        """
        shards: dict[str, ShardInfo] = {}
        token: str | None = None
        with_name = False  # moto wants StreamName with NextToken; AWS refuses it
        restarts = 0
        while True:
            request: dict[str, Any] = {"MaxResults": _LIST_PAGE}
            if token is None or with_name:
                request["StreamName"] = stream
            if token is not None:
                request["NextToken"] = token
            try:
                page = self._call(f"ListShards of stream {stream!r}", self.client.list_shards, **request)
            except ClientError as err:
                code = error_code(err)
                if code == "ResourceNotFoundException":
                    raise self._not_found(stream, None, err) from None
                if code == "InvalidToken" and token is not None and not with_name:
                    with_name = True
                    continue
                if code == "ExpiredNextTokenException" and restarts < 3:
                    restarts += 1
                    token, with_name = None, False
                    continue
                if code == "ResourceInUseException":
                    raise KinesisSourceError(f"Kinesis stream {stream!r} is not ACTIVE yet (being created or "
                                             f"deleted?) ({self.where()}): {self._scrub(err)}") from None
                raise KinesisSourceError(f"ListShards of stream {stream!r} failed ({self.where()}): "
                                         f"{self._scrub(err)}") from None
            for raw in page.get("Shards", []):
                info = self.shard_info(raw)
                shards[info.shard_id] = info
            token = page.get("NextToken")
            if not token:
                break
        return sorted(shards.values())

    def stream_identity(self, stream: str) -> tuple[str, int]:
        """(``StreamARN``, ``StreamCreationTimestamp`` in epoch ms) from ``DescribeStreamSummary``: a stream deleted
        and re-created under the same name keeps its ARN but gets a new creation time."""
        try:
            summary = self._call(f"DescribeStreamSummary of stream {stream!r}", self.client.describe_stream_summary,
                                 StreamName=stream)["StreamDescriptionSummary"]
        except ClientError as err:
            if error_code(err) == "ResourceNotFoundException":
                raise self._not_found(stream, None, err) from None
            raise KinesisSourceError(f"DescribeStreamSummary of stream {stream!r} failed ({self.where()}): "
                                     f"{self._scrub(err)}") from None
        created = summary["StreamCreationTimestamp"]
        created_ms = int(created.timestamp() * 1000) if hasattr(created, "timestamp") else int(float(created) * 1000)
        return str(summary["StreamARN"]), created_ms

    @staticmethod
    def shard_info(raw: dict[str, Any]) -> ShardInfo:
        """A ``ShardInfo`` from one ``ListShards`` / ``DescribeStream`` shard entry."""
        parents = tuple(p for p in (raw.get("ParentShardId"), raw.get("AdjacentParentShardId")) if p)
        hash_range = raw.get("HashKeyRange", {})
        seq_range = raw.get("SequenceNumberRange", {})
        return ShardInfo(
            shard_id=raw["ShardId"],
            parent_ids=parents,
            hash_start=int(hash_range.get("StartingHashKey", 0)),
            hash_end=int(hash_range.get("EndingHashKey", 2**128 - 1)),
            starting_sequence=seq_range.get("StartingSequenceNumber"),
            ending_sequence=seq_range.get("EndingSequenceNumber"),
        )

    # ---- iterators ------------------------------------------------------------------------------------------
    def shard_iterator(self, stream: str, shard_id: str, position: ShardPosition, *,
                       at_for_after: bool = False) -> str | None:
        """A shard iterator positioned for ``position`` (None for SHARD_END; see :func:`iterator_request`)."""
        request = iterator_request(position, at_for_after=at_for_after)
        if request is None:
            return None
        what = f"GetShardIterator for shard {shard_id} of stream {stream!r} at {position}"
        try:
            resp = self._call(what, self.client.get_shard_iterator, StreamName=stream, ShardId=shard_id, **request)
        except ClientError as err:
            if error_code(err) == "ResourceNotFoundException":
                raise self._not_found(stream, shard_id, err) from None
            raise KinesisSourceError(f"{what} failed ({self.where()}): {self._scrub(err)}") from None
        return resp.get("ShardIterator")

    @staticmethod
    def latest_timestamp_position(now_ms: int | None = None) -> ShardPosition:
        """"Latest" as a replayable position: AT_TIMESTAMP(now), as the AWS connector implements ``LATEST``
        (a ``LATEST`` iterator would mean something else on every replay of the batch)."""
        return ShardPosition.at_timestamp(int(time.time() * 1000) if now_ms is None else now_ms)

    # ---- probes ---------------------------------------------------------------------------------------------
    def has_records(self, stream: str, shard_id: str, position: ShardPosition) -> bool:
        """True when reading ``shard_id`` from ``position`` would return at least one user record now.

        A few ``GetRecords`` calls with ``Limit=1`` (each counts against the shard's 5 reads/s: probe a shard at
        most about once a second).  Sub-records already consumed (``AFTER_SEQUENCE_NUMBER`` with ``sub >= 0``) do
        not count.  Conservative: when Kinesis pages through a stretch without records (empty responses while
        ``MillisBehindLatest > 0``) for longer than the probe budget, the answer is True.  A closed shard that has
        no record left answers False: the caller must still plan it once to reach ``SHARD_END``.
        """
        if position.is_shard_end:
            return False
        iterator = self.shard_iterator(stream, shard_id, position)
        skip_seq, skip_sub = (position.sequence, position.sub) if (
            position.type == AFTER_SEQUENCE_NUMBER and position.sub >= 0) else (None, -1)
        for _ in range(_PROBE_CALLS):
            if iterator is None:
                return False
            what = f"GetRecords probe of shard {shard_id} of stream {stream!r}"
            try:
                resp = self._call(what, self.client.get_records, ShardIterator=iterator, Limit=1)
            except ClientError as err:
                if error_code(err) == "ResourceNotFoundException":
                    raise self._not_found(stream, shard_id, err) from None
                raise KinesisSourceError(f"{what} failed ({self.where()}): {self._scrub(err)}") from None
            for record in resp.get("Records", []):
                if record["SequenceNumber"] != skip_seq:
                    return True
                users = kpl.deaggregate(record["Data"])
                if users is not None and len(users) > skip_sub + 1:
                    return True
            behind = resp.get("MillisBehindLatest")
            if not resp.get("Records") and behind == 0:
                return False
            iterator = resp.get("NextShardIterator")
        return True
