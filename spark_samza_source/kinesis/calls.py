"""Bounded Kinesis calls: the retrying call helper and the error rules both the driver and the executors use.

The driver's :class:`~spark_samza_source.kinesis.driver.admin.KinesisAdmin` (shard discovery, probes) and the executors'
shard reader (``GetShardIterator`` / ``GetRecords``) make their calls through :class:`KinesisCalls`. It lives
apart from the admin so that executor code never imports a driver module (docs/architecture.md §2). Rules:

* **One retry policy, ours.** Kinesis clients make one attempt per call (``client``: botocore's retries are off),
  so every retry of a Kinesis call is made here (or in the shard reader's loop), never twice over.
* **Bounded.** Throttling (``LimitExceededException``, ``ProvisionedThroughputExceededException``) is retried here
  with exponential backoff for at most ``max_retries`` attempts, then a :class:`KinesisThrottledError` names the
  operation and stream. A call given a ``deadline`` (the shard reader's ``maxFetchTimePerShard``) never sleeps
  past it: still throttled there, it raises :class:`ThrottledAtDeadlineError` (a ``KinesisThrottledError``) and the
  reader ends its batch where it stands. An endpoint that does not answer
  (connection refused, reset or timed out; HTTP 5xx) is retried with backoff for up to ``retry_timeout_s`` (option
  ``endpoint.retryTimeout``, :class:`RetryClock`), then a :class:`KinesisSourceError` names the endpoint, how
  long and how often it was tried, and the option.
* **No credential in a message.** Texts from botocore go through ``scrub``.
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

from ..options.common import RETRY_TIMEOUT
from . import errors
from .client import AwsClientSettings, client_where
from .errors import KinesisSourceError
from .positions import AFTER_SEQUENCE_NUMBER, AT_SEQUENCE_NUMBER, AT_TIMESTAMP, SHARD_END, TRIM_HORIZON, ShardPosition

__all__ = ["KinesisCalls", "RetryClock", "THROTTLING_CODES", "UNREACHABLE", "error_code",
           "is_outage", "iterator_request", "unreachable"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: botocore's "no answer" errors (connection refused / reset / closed, timeouts), raised after its own retries
UNREACHABLE = (BotoConnectionError, HTTPClientError)

#: error codes meaning "slow down"; retried with backoff (KMS throttling included: encrypted streams)
THROTTLING_CODES = frozenset({
    "ProvisionedThroughputExceededException", "LimitExceededException", "ThrottlingException",
    "KMSThrottlingException", "RequestLimitExceeded",
})


def unreachable(what: str, where: str, err: BaseException, scrub: Callable[[object], str],
                clock: RetryClock | None = None) -> KinesisSourceError:
    """The error for an AWS endpoint that did not answer: what was asked, of which endpoint, for how long, and
    botocore's words (scrubbed of credentials)."""
    tried = ""
    if clock is not None:
        tried = (f" for {clock.elapsed_s():.1f} s ({clock.attempts} attempts; option '{RETRY_TIMEOUT.name}' is "
                 f"{clock.timeout_s:g} s)")
    return errors.endpoint_unreachable(what, where, scrub(err), tried)


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


class KinesisCalls:
    """Calls to one Kinesis endpoint through a boto3 client (see ``client.kinesis_client``), each bounded: retried
    on throttling for at most ``max_retries`` attempts and on an endpoint that does not answer for at most
    ``retry_timeout_s``."""

    def __init__(self, client: Any, *, settings: AwsClientSettings | None = None, max_retries: int = 8,
                 backoff_base_s: float = 0.1, backoff_max_s: float = 5.0,
                 retry_timeout_s: float | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
        self.client = client
        self.sleep = sleep
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

    def call(self, what: str, fn: Callable[..., T], *, deadline: float | None = None, **kwargs: Any) -> T:
        """``fn(**kwargs)`` with bounded retries on throttling and on an endpoint that does not answer.

        ``deadline`` (``time.monotonic()`` value): no backoff after a throttled attempt sleeps past it; still
        throttled there, :class:`ThrottledAtDeadlineError` is raised."""
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
                        raise errors.throttled(what, self.max_retries, self.where(), self._scrub(err)) from None
                    raise
                delay = self.backoff_s(attempt)
                if deadline is not None and time.monotonic() + delay >= deadline:
                    raise errors.throttled_at_deadline(what, attempt + 1, self.where(), self._scrub(err)) from None
                self.sleep(delay)
                attempt += 1
