"""The registry of parked fan-out subscriptions (``kinesis/executor/parked_subscriptions.py``) on its own: taking
removes,
expiry and the size cap close what they drop, on the registry's own clock; and with the real clock, its reaper
thread closes what expires when no read comes to park or take again. Reads through real subscriptions:
tests/integration/kinesis/test_kinesis_fanout_parking.py."""

from __future__ import annotations

import threading
import time

from samza_devkit.waits import deadline_after
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
    registry = ParkedSubscriptions(clock=Clock(), background_reaper=False)
    first, second = parked("5"), parked("7")
    registry.park(("c", "arn", "shard-0"), first)
    registry.park(("c", "arn", "shard-0"), second)
    assert first.events.closed and not second.events.closed
    assert registry.take(("c", "arn", "shard-0")) is second
    assert registry.take(("c", "arn", "shard-0")) is None and len(registry) == 0


def test_expired_ones_are_closed_when_a_read_parks_or_takes_and_the_oldest_go_beyond_the_cap():
    clock = Clock()
    registry = ParkedSubscriptions(ttl_s=60, max_parked=2, clock=clock, background_reaper=False)
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


def _until(condition, what: str, timeout_s: float = 10.0) -> None:
    deadline = deadline_after(timeout_s)
    while not condition():
        assert time.monotonic() < deadline, f"not {what} within {timeout_s} s"
        time.sleep(0.01)


def _reapers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "parked-subscriptions-reaper"]


def test_what_expires_is_closed_without_another_read_and_the_reaper_ends_with_the_registry_empty():
    """After the last read of a process (a query stopped in a session that lives on) nothing parks or takes again:
    the reaper alone closes the subscriptions left, once expired, and stops when none is left; a later park starts
    it again."""
    registry = ParkedSubscriptions(ttl_s=0.2)
    before = len(_reapers())
    first, second = parked(), parked()
    registry.park(("c", "arn", "shard-0"), first)
    registry.park(("c", "arn", "shard-1"), second)
    assert len(_reapers()) == before + 1  # one for the registry, however many are parked
    _until(lambda: first.events.closed and second.events.closed, "closed by the reaper")
    assert len(registry) == 0
    _until(lambda: len(_reapers()) == before, "the reaper ended")
    again = parked()
    registry.park(("c", "arn", "shard-0"), again)
    _until(lambda: again.events.closed, "closed by a new reaper")


def test_the_reaper_leaves_what_has_not_expired_and_what_was_taken():
    registry = ParkedSubscriptions(ttl_s=30)
    kept, taken = parked(), parked()
    registry.park(("c", "arn", "shard-0"), kept)
    registry.park(("c", "arn", "shard-1"), taken)
    assert registry.take(("c", "arn", "shard-1")) is taken
    time.sleep(0.3)  # the reaper looked when it started (nothing was due) and looks again within REAP_INTERVAL_S
    assert not kept.events.closed and not taken.events.closed and len(registry) == 1
    assert registry.close_all() == 1 and kept.events.closed
