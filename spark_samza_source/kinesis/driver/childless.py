"""Closed shards whose children ListShards never names: an answer that contradicts itself, named, not trusted.

Kinesis closes a shard only by splitting or merging it, and the shards that take over its hash keys are listed from
the moment it closes. A closed shard that the query drained while no listed shard names it as a parent means the
listing hides part of the stream (a proxy, an emulator, a stream being torn down): the records of its hash keys
written since it closed are in shards this query cannot see, and reading on would skip them without a word.

A listing may lag behind a reshard for a moment (emulators create the children after the parent closes), so a shard
counts as childless only after :data:`CHILDLESS_GRACE_MS` without children; then it is data loss under the source's
rule (fail with ``failOnDataLoss=true``; with ``false`` one WARN and a progress entry). Kept in the driver's
memory: a restart starts the grace again, which only delays the verdict.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..shards import ShardInfo

__all__ = ["CHILDLESS_GRACE_MS", "ChildlessShards"]

CHILDLESS_GRACE_MS = 120_000  # several ListShards rounds, far past any emulator's reshard lag seen (one plan)


class ChildlessShards:
    """Tracks, across plans, since when each drained closed shard has had no listed child."""

    def __init__(self, grace_ms: int = CHILDLESS_GRACE_MS) -> None:
        self.grace_ms = grace_ms
        self._since: dict[str, int] = {}

    def past_grace(self, listed: Sequence[ShardInfo], drained: Iterable[str], now_ms: int) -> dict[str, int]:
        """{shard id: milliseconds without a child} for the drained closed shards childless past the grace."""
        parents = {parent for info in listed for parent in info.parent_ids}
        by_id: Mapping[str, ShardInfo] = {info.shard_id: info for info in listed}
        childless = {sid for sid in drained if sid in by_id and by_id[sid].closed and sid not in parents}
        self._since = {sid: self._since.get(sid, now_ms) for sid in childless}
        return {sid: now_ms - since for sid, since in sorted(self._since.items()) if now_ms - since >= self.grace_ms}
