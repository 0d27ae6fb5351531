"""What the planner knows about a shard: id, lineage, hash-key range, and whether it is closed. Pure data.

Built by the admin from ``ListShards`` (``ParentShardId``, ``AdjacentParentShardId``, ``HashKeyRange``,
``SequenceNumberRange.EndingSequenceNumber``); a shard with an ending sequence number is closed (it was split
or merged) and is drained once it has been read to that number (or its iterator came back null).

With it, the two questions every user of a listing asks: which shard is which (:func:`index_shards`) and which
comes after which (:func:`lineage_order`). The planner, the mapper and the starting strategies all ask them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import KinesisPlanError


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


def index_shards(shards: Sequence[ShardInfo]) -> dict[str, ShardInfo]:
    """A ``ListShards`` listing by shard id, refusing anything that is not one (not a ShardInfo, a shard twice)."""
    listed: dict[str, ShardInfo] = {}
    for info in shards:
        if not isinstance(info, ShardInfo):
            raise KinesisPlanError(f"expected ShardInfo from ListShards, got {info!r:.80}")
        if info.shard_id in listed:
            raise KinesisPlanError(f"ListShards returned shard {info.shard_id} twice")
        listed[info.shard_id] = info
    return listed


def lineage_order(shards: Iterable[ShardInfo]) -> list[ShardInfo]:
    """``shards`` with every shard after its parents (among ``shards``); ties by (starting hash key, shard id).

    Sorted by lineage depth within the given set, so the order is deterministic and independent of the input
    order. A parent cycle (impossible in Kinesis) is broken rather than looped on.
    """
    by_id = {s.shard_id: s for s in shards}
    depth: dict[str, int] = {}
    for root in by_id:
        if root in depth:
            continue
        stack = [root]
        on_stack = {root}
        while stack:
            sid = stack[-1]
            pending = [p for p in by_id[sid].parent_ids if p in by_id and p not in depth and p not in on_stack]
            if pending:
                stack.append(pending[0])
                on_stack.add(pending[0])
                continue
            stack.pop()
            on_stack.discard(sid)
            depth[sid] = 1 + max((depth.get(p, -1) for p in by_id[sid].parent_ids if p in by_id), default=-1)
    return sorted(by_id.values(), key=lambda s: (depth[s.shard_id], s.hash_start, s.shard_id))


def lineage_families(shards: Iterable[ShardInfo]) -> dict[str, str]:
    """shard id -> its family among ``shards``: the smallest shard id of the set it is joined to by parent links
    (a split's two children share their parent's family, a merge joins its two parents'). A read that must keep a
    parent before its child keeps a family together; separate families share no key range history."""
    by_id = {s.shard_id: s for s in shards}
    root: dict[str, str] = {sid: sid for sid in by_id}

    def find(sid: str) -> str:
        while root[sid] != sid:
            root[sid] = root[root[sid]]
            sid = root[sid]
        return sid

    for info in by_id.values():
        for parent in info.parent_ids:
            if parent in by_id:
                a, b = find(info.shard_id), find(parent)
                if a != b:
                    root[max(a, b)] = min(a, b)
    return {sid: find(sid) for sid in by_id}
