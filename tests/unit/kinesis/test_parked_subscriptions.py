"""The registry of parked fan-out subscriptions (``kinesis/executor/parked_subscriptions.py``) on its own: taking
removes,
expiry and the size cap close what they drop, on the registry's own clock. Reads through real subscriptions:
tests/integration/kinesis/test_kinesis_fanout_parking.py."""

from __future__ import annotations

from spark_samza_source.kinesis.executor.parked_subscriptions import ParkedSubscription, ParkedSubscriptions
from spark_samza_source.kinesis.positions import ShardPosition


class Subscription:
    """What the registry needs of a subscription's event source: ``close()``."""

    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def parked(sequence: str = "5") -> ParkedSubscription:
    return ParkedSubscription(Subscription(), ShardPosition.after_sequence(sequence, -1), None, None, "shard 0")


def test_taking_removes_and_a_newer_one_for_the_same_shard_replaces_the_older():
    registry = ParkedSubscriptions(clock=Clock())
    first, second = parked("5"), parked("7")
    registry.park(("c", "arn", "shard-0"), first)
    registry.park(("c", "arn", "shard-0"), second)
    assert first.events.closed and not second.events.closed
    assert registry.take(("c", "arn", "shard-0")) is second
    assert registry.take(("c", "arn", "shard-0")) is None and len(registry) == 0


def test_expired_ones_are_closed_when_a_read_parks_or_takes_and_the_oldest_go_beyond_the_cap():
    clock = Clock()
    registry = ParkedSubscriptions(ttl_s=60, max_parked=2, clock=clock)
    old, kept = parked(), parked()
    registry.park(("c", "arn", "shard-0"), old)
    clock.now += 59
    registry.park(("c", "arn", "shard-1"), kept)
    clock.now += 1
    assert registry.take(("c", "arn", "shard-9")) is None
    assert old.events.closed and not kept.events.closed and len(registry) == 1  # 60 s: expired
    newer, newest = parked(), parked()
    registry.park(("c", "arn", "shard-2"), newer)
    registry.park(("c", "arn", "shard-3"), newest)  # a third: the oldest goes
    assert kept.events.closed and not newer.events.closed and len(registry) == 2
    assert registry.close_all() == 2 and newer.events.closed and newest.events.closed
