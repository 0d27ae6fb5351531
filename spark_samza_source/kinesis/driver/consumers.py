"""Registered stream consumers (enhanced fan-out), on the driver and in the ``samza-source`` CLI.

A query with ``consumerType=SubscribeToShard`` reads through the stream consumer ``consumerName``: the driver
registers it when it does not exist, reuses it when it does, and waits (bounded) until it is ``ACTIVE`` before
any task subscribes. It is never deregistered by the source: AWS charges for a registered consumer per shard-hour
whether or not it reads, and a query stopped on purpose, failed, or about to restart cannot be told apart, so
removing it is an operator's decision (``samza-source consumers list / deregister``). Calls go through the one
retry policy (``calls.KinesisCalls``: throttling with backoff, an endpoint that does not answer for
``endpoint.retryTimeout``); AWS allows few ``RegisterStreamConsumer`` / ``DescribeStreamConsumer`` calls per
second, so waiting polls at most every ``poll_s``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from .. import errors
from ..calls import KinesisCalls, error_code
from ..errors import KinesisSourceError
from ..options import CONSUMER_NAME

__all__ = ["ACTIVE", "StreamConsumer", "StreamConsumers", "DEFAULT_ACTIVE_TIMEOUT_S"]

log = logging.getLogger(__name__)

ACTIVE = "ACTIVE"
DEFAULT_ACTIVE_TIMEOUT_S = 120.0  # AWS: a consumer becomes ACTIVE within seconds; a minute or two under load


@dataclass(frozen=True)
class StreamConsumer:
    """One registered consumer of a stream: its name, ARN, status and registration time (epoch ms)."""

    name: str
    arn: str
    status: str
    created_ms: int | None = None

    @classmethod
    def from_aws(cls, raw: dict[str, Any]) -> StreamConsumer:
        created: Any = raw.get("ConsumerCreationTimestamp")  # a datetime from boto3
        created_ms = int(created.timestamp() * 1000) if hasattr(created, "timestamp") else None
        return cls(str(raw["ConsumerName"]), str(raw["ConsumerARN"]), str(raw["ConsumerStatus"]), created_ms)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "arn": self.arn, "status": self.status, "createdMs": self.created_ms}


class StreamConsumers:
    """The stream consumers of one stream (``stream_arn``), through bounded calls."""

    def __init__(self, calls: KinesisCalls, stream: str, stream_arn: str, *,
                 sleep: Callable[[float], None] = time.sleep, poll_s: float = 0.5) -> None:
        self.calls = calls
        self.client = calls.client
        self.stream = stream
        self.stream_arn = stream_arn
        self.sleep = sleep
        self.poll_s = poll_s

    def _what(self, operation: str, name: str | None = None) -> str:
        who = f"stream consumer {name!r} of " if name else "stream consumers of "
        return f"{operation} of {who}stream {self.stream!r}"

    def _failed(self, what: str, err: ClientError) -> KinesisSourceError:
        return errors.operation_failed(what, self.calls.where(), self.calls._scrub(err))

    def list(self) -> list[StreamConsumer]:
        """Every consumer registered on the stream, sorted by name."""
        out: list[StreamConsumer] = []
        token = None
        what = self._what("ListStreamConsumers")
        while True:
            request: dict[str, Any] = {"NextToken": token} if token else {"StreamARN": self.stream_arn}
            try:
                page = self.calls.call(what, self.client.list_stream_consumers, **request)
            except ClientError as err:
                raise self._failed(what, err) from None
            out.extend(StreamConsumer.from_aws(c) for c in page.get("Consumers", []))
            token = page.get("NextToken")
            if not token:
                return sorted(out, key=lambda c: c.name)

    def describe(self, name: str) -> StreamConsumer | None:
        """The consumer ``name``, None when it is not registered."""
        what = self._what("DescribeStreamConsumer", name)
        try:
            raw = self.calls.call(what, self.client.describe_stream_consumer, StreamARN=self.stream_arn,
                                  ConsumerName=name)["ConsumerDescription"]
        except ClientError as err:
            if error_code(err) == "ResourceNotFoundException":
                return None
            raise self._failed(what, err) from None
        return StreamConsumer.from_aws(raw)

    def ensure_active(self, name: str, timeout_s: float = DEFAULT_ACTIVE_TIMEOUT_S) -> StreamConsumer:
        """The consumer ``name``, registered when absent, reused when present, once ``ACTIVE``."""
        consumer = self.describe(name)
        if consumer is None:
            consumer = self._register(name)
        else:
            log.info("stream consumer %r of stream %r already registered (%s, %s): reusing it", name, self.stream,
                     consumer.arn, consumer.status)
        deadline = time.monotonic() + timeout_s
        while consumer.status != ACTIVE:
            if consumer.status == "DELETING" or time.monotonic() >= deadline:
                raise errors.consumer_not_active(name, self.stream, (consumer.arn, consumer.status), timeout_s,
                                                 self.calls.where(), consumer_name_option=CONSUMER_NAME.name)
            self.sleep(self.poll_s)
            consumer = self.describe(name) or self._register(name)
        return consumer

    def _register(self, name: str) -> StreamConsumer:
        what = self._what("RegisterStreamConsumer", name)
        try:
            raw = self.calls.call(what, self.client.register_stream_consumer, StreamARN=self.stream_arn,
                                  ConsumerName=name)["Consumer"]
        except ClientError as err:
            if error_code(err) == "ResourceInUseException":  # registered meanwhile (another driver): reuse it
                found = self.describe(name)
                if found is not None:
                    return found
            if error_code(err) == "LimitExceededException":
                raise errors.consumer_limit_reached(what, self.calls.where(), self.calls._scrub(err),
                                                    consumer_name_option=CONSUMER_NAME.name) from None
            raise self._failed(what, err) from None
        consumer = StreamConsumer.from_aws(raw)
        log.warning("registered stream consumer %r of stream %r (%s): AWS charges for it per shard-hour until it is "
                    "deregistered ('samza-source consumers deregister')", name, self.stream, consumer.arn)
        return consumer

    def deregister(self, name: str) -> StreamConsumer:
        """Deregister the consumer ``name`` (an error when it is not registered); what it was."""
        consumer = self.describe(name)
        if consumer is None:
            raise errors.consumer_not_registered(name, self.stream, self.calls.where())
        what = self._what("DeregisterStreamConsumer", name)
        try:
            self.calls.call(what, self.client.deregister_stream_consumer, StreamARN=self.stream_arn,
                            ConsumerName=name)
        except ClientError as err:
            raise self._failed(what, err) from None
        log.warning("deregistered stream consumer %r of stream %r (%s)", name, self.stream, consumer.arn)
        return consumer
