"""``samza-source consumers list | deregister``: the enhanced fan-out consumers a job registered."""

from __future__ import annotations

import argparse
from typing import Any

from ....options.namespaces import (
    STREAM_CONSUMERS,
)
from .. import errors
from ..render import cell, render_table
from .common import Outcome, _header, _open, _where

# ---- stream consumers (enhanced fan-out) ---------------------------------------------------------------------


def _job_consumers(args: argparse.Namespace, store) -> list[dict[str, Any]]:
    """The consumers the job's store remembers (of ``--stream`` when given), sorted by stream and name."""
    found = [v for v in store.list(STREAM_CONSUMERS).values() if isinstance(v, dict)]
    if args.stream is not None:
        found = [v for v in found if v.get("stream") == args.stream]
    return sorted(found, key=lambda v: (str(v.get("stream")), str(v.get("name"))))


def _kinesis_calls(args: argparse.Namespace):
    from ....kinesis.calls import KinesisCalls
    from ....kinesis.client import AwsClientSettings, kinesis_client

    settings = AwsClientSettings(region=args.region, endpoint_url=args.endpoint)
    return KinesisCalls(kinesis_client(settings), settings=settings)


def _status_in_kinesis(calls, arn: str) -> str:
    """The consumer's status now (``ACTIVE``, ``CREATING``, ``DELETING``), or ``gone``."""
    from botocore.exceptions import ClientError

    from ....kinesis.calls import error_code

    try:
        described = calls.call(f"DescribeStreamConsumer {arn}", calls.client.describe_stream_consumer,
                               ConsumerARN=arn)
    except ClientError as err:
        if error_code(err) == "ResourceNotFoundException":
            return "gone"
        raise errors.kinesis_call_failed("DescribeStreamConsumer", arn, err) from None
    return str(described["ConsumerDescription"]["ConsumerStatus"])


def consumers_list(args: argparse.Namespace) -> Outcome:
    store = _open(args)
    consumers = _job_consumers(args, store)
    calls = _kinesis_calls(args) if consumers else None
    rows = [{**c, "statusNow": _status_in_kinesis(calls, str(c["arn"]))} for c in consumers]
    text = render_table(["stream", "consumer", "status", "ARN"],
                        [[cell(r.get("stream")), cell(r.get("name")), r["statusNow"], cell(r.get("arn"))]
                         for r in rows]) if rows else f"no stream consumer recorded for {_where(args)}"
    warnings = [] if rows else ["a job records its consumer when a query with consumerType=SubscribeToShard starts"]
    return Outcome({**_header(args), "consumers": rows}, text, warnings=warnings)


def consumers_deregister(args: argparse.Namespace) -> Outcome:
    from botocore.exceptions import ClientError

    from ....kinesis.calls import error_code

    store = _open(args)
    matching = [c for c in _job_consumers(args, store) if c.get("name") == args.name]
    if not matching:
        raise errors.consumer_not_found(_where(args), args.name, args.stream)
    if len(matching) > 1:
        raise errors.consumer_ambiguous(args.name, [str(c.get("stream")) for c in matching])
    consumer = matching[0]
    calls = _kinesis_calls(args)
    try:
        calls.call(f"DeregisterStreamConsumer {consumer['arn']}", calls.client.deregister_stream_consumer,
                   ConsumerARN=consumer["arn"])
        gone = False
    except ClientError as err:
        if error_code(err) != "ResourceNotFoundException":
            raise errors.kinesis_call_failed("DeregisterStreamConsumer", consumer["arn"], err) from None
        gone = True
    store.delete(STREAM_CONSUMERS, f"{consumer['stream']}/{consumer['name']}")
    what = "was already gone" if gone else "deregistered"
    text = (f"stream consumer {consumer['name']!r} of stream {consumer['stream']!r} ({consumer['arn']}) {what}; a "
            "query still configured with it registers it again when it starts")
    return Outcome({**_header(args), "deregistered": consumer, "alreadyGone": gone}, text)
