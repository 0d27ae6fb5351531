"""Kinesis metadata and iterators through boto3: shard lineage (``ListShards``), iterators for positions, probes.

Used on the driver (shard discovery, "is there anything to read?" probes). Every call goes through
:class:`~spark_samza_source.kinesis.calls.KinesisCalls` (bounded retries on throttling and on an endpoint that does
not answer), which the executors' reader uses too without importing this driver module. As in the Kafka admin:
a missing stream or shard raises :class:`KinesisStreamNotFoundError` naming the stream (and shard) and where it
was looked for (region, endpoint); texts from botocore go through ``scrub`` so a credential can never leak into a
message; the constructor does no I/O.

``ListShards`` pagination: AWS requires ``NextToken`` *without* ``StreamName`` on follow-up pages.  moto 5.2
rejects that (``InvalidToken``: it checksums the parameters of the first request); on that error the page is
requested again with both, which moto accepts and AWS never needs.
"""

from __future__ import annotations

import time
from typing import Any

from botocore.exceptions import ClientError

from .. import errors, kpl
from ..calls import (  # re-exported: callers and tests that predate calls.py import them from here
    THROTTLING_CODES,
    UNREACHABLE,
    KinesisCalls,
    RetryClock,
    error_code,
    is_outage,
    iterator_request,
    unreachable,
)
from ..errors import KinesisStreamNotFoundError
from ..options import ENDPOINT_URL, REGION, STREAM_NAME
from ..positions import AFTER_SEQUENCE_NUMBER, ShardPosition
from ..shards import ShardInfo

__all__ = ["KinesisAdmin", "RetryClock", "THROTTLING_CODES", "UNREACHABLE", "error_code", "is_outage",
           "iterator_request", "unreachable"]

_LIST_PAGE = 1000  # AWS default page size (maximum 10000)
_PROBE_CALLS = 5


class KinesisAdmin(KinesisCalls):
    """Metadata operations against one Kinesis endpoint through a boto3 client (see ``client.kinesis_client``)."""

    def _not_found(self, stream: str, shard_id: str | None, err: BaseException) -> KinesisStreamNotFoundError:
        return errors.stream_not_found(stream, shard_id, self.where(), self._scrub(err),
                                       stream_option=STREAM_NAME.name, region_option=REGION.name,
                                       endpoint_option=ENDPOINT_URL.name)

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
                page = self.call(f"ListShards of stream {stream!r}", self.client.list_shards, **request)
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
                    raise errors.stream_not_active(stream, self.where(), self._scrub(err)) from None
                raise errors.operation_failed(f"ListShards of stream {stream!r}", self.where(),
                                              self._scrub(err)) from None
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
            summary = self.call(f"DescribeStreamSummary of stream {stream!r}", self.client.describe_stream_summary,
                                 StreamName=stream)["StreamDescriptionSummary"]
        except ClientError as err:
            if error_code(err) == "ResourceNotFoundException":
                raise self._not_found(stream, None, err) from None
            raise errors.operation_failed(f"DescribeStreamSummary of stream {stream!r}", self.where(),
                                          self._scrub(err)) from None
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
            resp = self.call(what, self.client.get_shard_iterator, StreamName=stream, ShardId=shard_id, **request)
        except ClientError as err:
            if error_code(err) == "ResourceNotFoundException":
                raise self._not_found(stream, shard_id, err) from None
            raise errors.operation_failed(what, self.where(), self._scrub(err)) from None
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
                resp = self.call(what, self.client.get_records, ShardIterator=iterator, Limit=1)
            except ClientError as err:
                if error_code(err) == "ResourceNotFoundException":
                    raise self._not_found(stream, shard_id, err) from None
                raise errors.operation_failed(what, self.where(), self._scrub(err)) from None
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
