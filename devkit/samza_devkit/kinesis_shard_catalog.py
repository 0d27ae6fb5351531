"""What the kinesis-mock bridge needs to know about shards, asked of kinesis-mock itself: is a shard closed, which
is its last record, which are its children.

kinesis-mock reports a closed shard's ``EndingSequenceNumber`` as 9223372036854775807 (Java's ``Long.MAX_VALUE``,
a placeholder: its sequence numbers have 56 digits) and never ends a fan-out subscription on a closed shard. Both
fixes need the shard's real end, which a closed shard can no longer change: its last record, read once with
``GetRecords`` from ``TRIM_HORIZON`` to the null iterator and cached (keyed by the shard's starting sequence number
too, so a stream deleted and re-created under the same name is never confused with the old one). The children
come from ``ListShards``, in the shape AWS gives ``ChildShards`` in ``GetRecords`` and ``SubscribeToShard``.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

__all__ = ["ENDING_PLACEHOLDER", "DEFAULT_ACCOUNT", "ShardEnd", "ShardCatalog", "StreamRef"]

#: what kinesis-mock reports as a closed shard's EndingSequenceNumber
ENDING_PLACEHOLDER = "9223372036854775807"
#: the account kinesis-mock puts a request in when its access key is not a 12-digit account id
DEFAULT_ACCOUNT = "000000000000"
_READ_LIMIT = 10_000
_MAX_PAGES = 10_000


@dataclass(frozen=True)
class StreamRef:
    """A stream as kinesis-mock scopes it: region, account, name."""

    region: str
    account: str
    name: str

    @classmethod
    def from_arn(cls, arn: str) -> StreamRef:
        """From a stream ARN or a consumer ARN (``arn:aws:kinesis:REGION:ACCOUNT:stream/NAME[/consumer/...]``)."""
        parts = arn.split(":", 5)
        if len(parts) < 6 or not parts[5].startswith("stream/"):
            raise ValueError(f"not a Kinesis stream or consumer ARN: {arn!r}")
        return cls(parts[3], parts[4], parts[5][len("stream/"):].split("/consumer/")[0])

    @classmethod
    def from_request(cls, request: dict[str, Any], authorization: str) -> StreamRef | None:
        """The stream a Kinesis request names (``StreamARN``, else ``StreamName`` in the signer's region and
        account); None when it names none. A ``ListShards`` page asked with only a ``NextToken`` names its stream
        in kinesis-mock's token (``NAME::shardId-...``: opaque on AWS, plain text in kinesis-mock 0.6.2)."""
        if request.get("StreamARN"):
            return cls.from_arn(request["StreamARN"])
        match = re.search(r"Credential=([^/,\s]+)/[^/]+/([^/]+)/", authorization or "")
        name = request.get("StreamName") or str(request.get("NextToken") or "").partition("::")[0]
        if not name or match is None:
            return None
        key, region = match.groups()
        return cls(region, key if re.fullmatch(r"\d{12}", key) else DEFAULT_ACCOUNT, name)


@dataclass(frozen=True)
class ShardEnd:
    """A closed shard: the sequence number of its last record (None: it never had one) and its children."""

    last_sequence: str | None
    child_shards: list[dict[str, Any]]


class ShardCatalog:
    """Shard facts read from the kinesis-mock at ``upstream`` (boto3, signed so it scopes requests as the caller's)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self._lock = threading.Lock()
        self._clients: dict[tuple[str, str], Any] = {}
        self._last_sequences: dict[tuple[StreamRef, str, str], str | None] = {}

    def client(self, stream: StreamRef):
        key = (stream.region, stream.account)
        with self._lock:
            if key not in self._clients:
                # kinesis-mock takes a 12-digit access key as the account to act in
                self._clients[key] = boto3.client(
                    "kinesis", endpoint_url=self.upstream, region_name=stream.region,
                    aws_access_key_id=stream.account, aws_secret_access_key="bridge",
                    config=Config(retries={"mode": "standard", "max_attempts": 3}))
            return self._clients[key]

    def list_shards(self, stream: StreamRef) -> list[dict[str, Any]]:
        client, shards, token = self.client(stream), [], None
        while True:
            page = client.list_shards(NextToken=token) if token else client.list_shards(StreamName=stream.name)
            shards.extend(page["Shards"])
            token = page.get("NextToken")
            if not token:
                return shards

    def has_shard(self, stream: StreamRef, shard_id: str) -> bool | None:
        """Whether the stream has ``shard_id``; None when the stream cannot be listed (kinesis-mock answers then)."""
        try:
            return any(shard["ShardId"] == shard_id for shard in self.list_shards(stream))
        except ClientError:
            return None

    def shard_end(self, stream: StreamRef, shard_id: str) -> ShardEnd | None:
        """None while ``shard_id`` is open, else its end."""
        shards = self.list_shards(stream)
        shard = next((s for s in shards if s["ShardId"] == shard_id), None)
        if shard is None or "EndingSequenceNumber" not in shard["SequenceNumberRange"]:
            return None
        return ShardEnd(self.last_sequence(stream, shard), child_shards_of(shard_id, shards))

    def last_sequence(self, stream: StreamRef, shard: dict[str, Any]) -> str | None:
        """The sequence number of the last record of the closed ``shard`` (None when it has none)."""
        key = (stream, shard["ShardId"], shard["SequenceNumberRange"]["StartingSequenceNumber"])
        with self._lock:
            if key in self._last_sequences:
                return self._last_sequences[key]
        last = self._read_last_sequence(stream, shard["ShardId"])
        with self._lock:
            self._last_sequences[key] = last
        return last

    def _read_last_sequence(self, stream: StreamRef, shard_id: str) -> str | None:
        client, last = self.client(stream), None
        iterator = client.get_shard_iterator(StreamName=stream.name, ShardId=shard_id,
                                             ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        for _ in range(_MAX_PAGES):
            page = client.get_records(ShardIterator=iterator, Limit=_READ_LIMIT)
            if page["Records"]:
                last = page["Records"][-1]["SequenceNumber"]
            iterator = page.get("NextShardIterator")
            if not iterator or (not page["Records"] and page.get("MillisBehindLatest") == 0):
                break
        return last

    def fix_ending_sequences(self, stream: StreamRef, shards: list[dict[str, Any]]) -> bool:
        """Replace the placeholder ending sequence numbers in ``shards`` (a ListShards/DescribeStream list) in place:
        the last record's sequence number, or the starting sequence number for a shard that never had a record
        (a range holding no record). True if anything changed."""
        changed = False
        for shard in shards:
            numbers = shard.get("SequenceNumberRange", {})
            if numbers.get("EndingSequenceNumber") == ENDING_PLACEHOLDER:
                last = self.last_sequence(stream, shard)
                numbers["EndingSequenceNumber"] = last if last is not None else numbers["StartingSequenceNumber"]
                changed = True
        return changed


def child_shards_of(shard_id: str, shards: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The children of ``shard_id`` among ``shards``, shaped as AWS's ``ChildShards`` entries."""
    children = []
    for shard in shards:
        parents = [p for p in (shard.get("ParentShardId"), shard.get("AdjacentParentShardId")) if p]
        if shard_id in parents:
            children.append({"ShardId": shard["ShardId"], "ParentShards": parents,
                             "HashKeyRange": dict(shard["HashKeyRange"])})
    return children
