"""Where a samza-kinesis query without a checkpoint starts, as small strategy objects.

``startingPosition`` = ``LATEST`` / ``TRIM_HORIZON`` / ``AT_TIMESTAMP:<ISO-8601>`` / per-shard JSON / ``kcl``
becomes :class:`Latest`, :class:`TrimHorizon`, :class:`AtTimestamp`, :class:`PerShard` or :class:`KclCheckpoints`
(Flink's ``OffsetsInitializer`` style, as Kafka's ``starting.py``). The option parser builds one; the coordinator
calls its :meth:`StartingPosition.starts` once, when a query starts without a checkpoint (Startpoints override it
later), with the ``ListShards`` listing. What needs the outside world is handed in as callables: the wall clock,
the check of sequence numbers against Kinesis, the read of a KCL lease table. So a strategy does no I/O itself and
each rule is unit-tested without Kinesis.

The options travel to executors inside the stream reader, and these objects with them, so this module imports
nothing driver-side (``tests/unit/test_executor_imports.py``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from . import errors
from .errors import KinesisPlanError
from .positions import ShardPosition
from .shards import ShardInfo, index_shards, lineage_order


@dataclass(frozen=True)
class Starts:
    """What a strategy decided: shard id -> where it starts (shards missing start at ``TRIM_HORIZON``), and the
    time ``LATEST`` was fixed to, if the strategy fixed one (recorded in the offset)."""

    positions: dict[str, ShardPosition]
    latest_timestamp_ms: int | None = None


class StartingPosition(ABC):
    """Where every shard of a new checkpoint starts; one subclass per form of ``startingPosition``."""

    @abstractmethod
    def starts(
        self,
        shards: Sequence[ShardInfo],
        *,
        stream: str,
        now_ms: Callable[[], int],
        check_sequences: Callable[[Mapping[str, ShardPosition]], None],
        kcl_checkpoints: Callable[[], Mapping[str, ShardPosition]],
    ) -> Starts:
        """The start of every shard of ``shards`` (``ListShards`` of ``stream``, named in messages).

        ``now_ms`` is the driver's wall clock (epoch ms), read only by the strategies that need "now";
        ``check_sequences`` asks Kinesis whether each named sequence number is its shard's (raises
        :class:`ConfigError` if not); ``kcl_checkpoints`` reads the KCL lease table's checkpoints by shard.
        """


@dataclass(frozen=True)
class Latest(StartingPosition):
    """``LATEST`` (the default): what arrives from the query's start. Fixed once to ``AT_TIMESTAMP(now)``, so every
    replay reads the same records; a closed shard has nothing after now: it starts drained (``SHARD_END``), and
    its children are readable."""

    def starts(self, shards, *, stream, now_ms, check_sequences, kcl_checkpoints) -> Starts:
        latest_ms = now_ms()
        return Starts({s.shard_id: ShardPosition.shard_end() if s.closed else ShardPosition.at_timestamp(latest_ms)
                       for s in shards}, latest_ms)


@dataclass(frozen=True)
class TrimHorizon(StartingPosition):
    """``TRIM_HORIZON`` (or ``EARLIEST``): every shard from its oldest record still retained."""

    def starts(self, shards, *, stream, now_ms, check_sequences, kcl_checkpoints) -> Starts:
        return Starts({s.shard_id: ShardPosition.trim_horizon() for s in shards})



@dataclass(frozen=True)
class AtTimestamp(StartingPosition):
    """``AT_TIMESTAMP:<ISO-8601>``: every shard from its first record at or after ``timestamp_ms`` (epoch ms), which
    must not be in the future (Kinesis refuses it)."""

    timestamp_ms: int
    #: the option named in messages (``startingPosition``)
    option: str = field(kw_only=True, compare=False)

    def starts(self, shards, *, stream, now_ms, check_sequences, kcl_checkpoints) -> Starts:
        check_not_future(self.timestamp_ms, now_ms(), f"option '{self.option}'")
        return Starts({s.shard_id: ShardPosition.at_timestamp(self.timestamp_ms) for s in shards})


@dataclass(frozen=True)
class PerShard(StartingPosition):
    """Per-shard JSON: shard id -> position; the rules are :func:`per_shard_starts`', then every named sequence
    number is checked with Kinesis (real Kinesis refuses one that belongs to another shard)."""

    per_shard: Mapping[str, ShardPosition] = field(default_factory=dict)
    #: the option named in messages (``startingPosition``)
    option: str = field(kw_only=True, compare=False)

    def starts(self, shards, *, stream, now_ms, check_sequences, kcl_checkpoints) -> Starts:
        latest_ms = now_ms()
        positions = per_shard_starts(self.per_shard, shards, latest_timestamp_ms=latest_ms, stream=stream,
                                     option=self.option)
        check_sequences(self.per_shard)
        return Starts(positions, latest_ms)


@dataclass(frozen=True)
class KclCheckpoints(StartingPosition):
    """``kcl``: each shard after the checkpoint a KCL application's lease table holds for it (``SHARD_END`` for a
    finished shard); see :func:`kcl_starts` for shards without a lease."""

    def starts(self, shards, *, stream, now_ms, check_sequences, kcl_checkpoints) -> Starts:
        return Starts(kcl_starts(kcl_checkpoints(), shards))


def kcl_starts(leases: Mapping[str, ShardPosition], shards: Sequence[ShardInfo]) -> dict[str, ShardPosition]:
    """Start positions from a KCL lease table's checkpoints (pure: ``shards`` is ``ListShards``).

    A shard with a lease starts after its checkpoint. A shard without one starts at ``TRIM_HORIZON`` (KCL has not
    reached it), unless one of its descendants (children of a split or merge, at any depth) has a lease: KCL
    deletes the lease of a parent it finished once the children have checkpoints of their own (its
    ``LeaseCleanupManager``, with ``cleanupLeasesUponShardCompletion``, the default), so a missing parent row next
    to a child row means the parent is done (``SHARD_END``); reading it from its start would repeat it all.
    """
    children: dict[str, list[str]] = {}
    for info in shards:
        for parent in info.parent_ids:
            children.setdefault(parent, []).append(info.shard_id)

    def has_leased_descendant(shard_id: str, seen: set[str]) -> bool:
        for child in children.get(shard_id, ()):
            if child in seen:
                continue
            seen.add(child)
            if child in leases or has_leased_descendant(child, seen):
                return True
        return False

    out = dict(leases)
    for info in shards:
        if info.shard_id not in out and has_leased_descendant(info.shard_id, set()):
            out[info.shard_id] = ShardPosition.shard_end()
    return out


def per_shard_starts(
    named: Mapping[str, ShardPosition], shards: Sequence[ShardInfo], *, latest_timestamp_ms: int, stream: str,
    option: str,
) -> dict[str, ShardPosition]:
    """Start positions of a new query from a per-shard ``startingPosition`` (pure: ``shards`` is ``ListShards``).

    Checks, each failing with a :class:`ConfigError` naming the option, the shard and the fix:

    - every named shard is listed (a typo must not silently fall back to a default for the shard it meant);
    - an ``AT_SEQUENCE_NUMBER`` / ``AFTER_SEQUENCE_NUMBER`` lies in the shard's ``SequenceNumberRange``: not
      below its ``StartingSequenceNumber``, and for a closed shard not above its ``EndingSequenceNumber``;
    - an ``AT_TIMESTAMP`` is not later than ``latest_timestamp_ms`` (now; see :func:`check_not_future`).

    Shards not named start as ``startingPosition=LATEST`` would start them (as Spark's Kafka source starts
    partitions not named in ``startingOffsets`` at latest): an open shard at ``AT_TIMESTAMP(latest_timestamp_ms)``,
    a closed one at ``SHARD_END``. Except descendants of a named shard (children of a split or merge, at any depth):
    they start at ``TRIM_HORIZON``, because their records are the ones that follow the named shard's, and starting
    them at "now" would skip every record between the named shard's end and the query's start.
    """
    listed = index_shards(shards)
    unknown = sorted(set(named) - set(listed))
    if unknown:
        known = ", ".join(sorted(listed)[:20]) + (" ..." if len(listed) > 20 else "")
        raise errors.starting_shards_unknown(option, unknown, stream, known)
    for sid, pos in sorted(named.items()):
        if not isinstance(pos, ShardPosition):
            raise KinesisPlanError(f"starting position of shard {sid} must be a ShardPosition, got {pos!r:.80}")
        info = listed[sid]
        if pos.sequence is not None:
            seq = int(pos.sequence)
            low = int(info.starting_sequence) if info.starting_sequence else None
            high = int(info.ending_sequence) if info.ending_sequence else None
            if (low is not None and seq < low) or (high is not None and seq > high):
                span = f"[{info.starting_sequence}, {info.ending_sequence or 'open'}]"
                raise errors.starting_sequence_outside_shard(option, sid, stream, pos, span)
        if pos.timestamp_ms is not None:
            check_not_future(pos.timestamp_ms, latest_timestamp_ms, f"option '{option}' for shard {sid}")
    follows_named: set[str] = set()
    out: dict[str, ShardPosition] = {}
    for info in lineage_order(listed.values()):
        sid = info.shard_id
        if sid in named:
            out[sid] = named[sid]
            follows_named.add(sid)
        elif any(p in follows_named for p in info.parent_ids):
            out[sid] = ShardPosition.trim_horizon()
            follows_named.add(sid)
        else:
            out[sid] = ShardPosition.shard_end() if info.closed else ShardPosition.at_timestamp(latest_timestamp_ms)
    return out


def check_not_future(timestamp_ms: int, now_ms: int, what: str) -> None:
    """A start ``AT_TIMESTAMP`` later than now is refused, as Kinesis refuses it: AWS answers ``GetShardIterator``
    with ``InvalidArgumentException`` ("The timestampInMillis parameter cannot be greater than the
    currentTimestampInMillis"), and Spark's Kafka source fails a ``startingTimestamp`` no record reaches."""
    if timestamp_ms > now_ms:
        from datetime import UTC, datetime

        def iso(ms: int) -> str:
            return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

        raise errors.timestamp_in_future(what, iso(timestamp_ms), iso(now_ms))


__all__ = [
    "AtTimestamp", "KclCheckpoints", "Latest", "PerShard", "StartingPosition", "Starts",
    "TrimHorizon", "check_not_future", "kcl_starts", "per_shard_starts",
]
