"""What the planner knows about a shard: id, lineage, hash-key range, and whether it is closed. Pure data.

Built by the admin from ``ListShards`` (``ParentShardId``, ``AdjacentParentShardId``, ``HashKeyRange``,
``SequenceNumberRange.EndingSequenceNumber``); a shard with an ending sequence number is closed (it was split
or merged) and is drained once it has been read to that number (or its iterator came back null).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, order=True)
class ShardInfo:
    shard_id: str
    parent_ids: tuple[str, ...] = ()  # ParentShardId then AdjacentParentShardId (a merge has two)
    hash_start: int = 0
    hash_end: int = 2**128 - 1
    starting_sequence: str | None = None
    ending_sequence: str | None = None  # set once the shard is closed

    @property
    def closed(self) -> bool:
        return self.ending_sequence is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "endingSequence": self.ending_sequence,
            "hashEnd": str(self.hash_end),
            "hashStart": str(self.hash_start),
            "parents": list(self.parent_ids),
            "shardId": self.shard_id,
            "startingSequence": self.starting_sequence,
        }

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> ShardInfo:
        return cls(
            value["shardId"],
            tuple(value.get("parents", ())),
            int(value.get("hashStart", 0)),
            int(value.get("hashEnd", 2**128 - 1)),
            value.get("startingSequence"),
            value.get("endingSequence"),
        )
