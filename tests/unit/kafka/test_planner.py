"""The pure batch planner: rebases, expansion barriers, data loss, read limits, no-op detection."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_samza_source.core.errors import DataLossError
from spark_samza_source.core.jobmodel import JobModel
from spark_samza_source.core.model import SystemStream, SystemStreamPartition, TaskName
from spark_samza_source.kafka.driver.offset import KafkaOffset
from spark_samza_source.kafka.driver.planner import PlanRules, ResolvedStartpoint, plan_next, split_read_limit
from spark_samza_source.kafka.positions import Watermarks

T0, T1 = TaskName("Partition 0"), TaskName("Partition 1")


def ssp(p, stream="orders"):
    return SystemStreamPartition("kafka", stream, p)


def model(count, initial=2):
    tasks = {T0: set(), T1: set()}
    for p in range(count):
        tasks[T0 if p % 2 == 0 else T1].add(ssp(p))
    return JobModel(tasks, {SystemStream("kafka", "orders"): initial})


def offset(positions, count=2, **kw):
    jm = model(count)
    pos = {(jm.tasks_for(ssp(p))[0], ssp(p)): v for p, v in positions.items()}
    return KafkaOffset(jm, pos, **kw)


def marks(**by_partition):
    return {ssp(int(k[1:])): Watermarks(*v) for k, v in by_partition.items()}


def test_nothing_new_returns_the_previous_offset_itself():
    prev = offset({0: 10, 1: 20})
    result = plan_next(prev, prev.job_model, marks(p0=(0, 10), p1=(0, 20)))
    assert result.offset is prev


def test_reads_everything_available_without_a_limit():
    prev = offset({0: 10, 1: 20})
    result = plan_next(prev, prev.job_model, marks(p0=(0, 15), p1=(5, 29)))
    assert result.offset.positions == {(T0, ssp(0)): 15, (T1, ssp(1)): 29}
    assert result.offset.rebases == {}


def test_read_limit_is_split_in_proportion_to_backlog_and_never_exceeded():
    prev = offset({0: 0, 1: 0})
    result = plan_next(prev, prev.job_model, marks(p0=(0, 300), p1=(0, 100)), max_rows=100)
    ends = result.offset.positions
    assert ends[(T0, ssp(0))] == 75 and ends[(T1, ssp(1))] == 25


@given(
    backlogs=st.lists(st.integers(min_value=0, max_value=10_000), min_size=1, max_size=20),
    limit=st.integers(min_value=1, max_value=50_000),
)
def test_split_read_limit_total_is_exact(backlogs, limit):
    keys = [(T0, ssp(i)) for i in range(len(backlogs))]
    starts = dict.fromkeys(keys, 7)
    caps = {k: 7 + b for k, b in zip(keys, backlogs, strict=True)}
    ends = split_read_limit(starts, caps, limit)
    taken = [ends[k] - starts[k] for k in keys]
    assert sum(taken) == min(limit, sum(backlogs))
    assert all(0 <= t <= b for t, b in zip(taken, backlogs, strict=True))


def test_startpoint_rebases_the_ssp_and_is_recorded_as_applied():
    prev = offset({0: 10, 1: 20})
    sp = {(T0, ssp(0)): ResolvedStartpoint(position=3, creation_timestamp=1000)}
    result = plan_next(prev, prev.job_model, marks(p0=(0, 12), p1=(0, 20)), startpoints=sp)
    off = result.offset
    assert off.rebases[(T0, ssp(0))].position == 3
    assert off.rebases[(T0, ssp(0))].creation_timestamp == 1000
    assert off.start_of(T0, ssp(0), prev) == 3
    assert off.positions[(T0, ssp(0))] == 12
    assert off.applied == {(T0, ssp(0)): 1000}
    # Planning again with the same (not yet deleted) startpoint must not apply it a second time.
    again = plan_next(off, off.job_model, marks(p0=(0, 12), p1=(0, 20)), startpoints=sp)
    assert again.offset is off
    # A newer startpoint for the same SSP is applied.
    newer = {(T0, ssp(0)): ResolvedStartpoint(position=5, creation_timestamp=2000)}
    third = plan_next(off, off.job_model, marks(p0=(0, 12), p1=(0, 20)), startpoints=newer)
    assert third.offset.rebases[(T0, ssp(0))].position == 5
    assert third.offset.applied[(T0, ssp(0))] == 2000


def test_startpoint_position_is_clamped_into_the_available_range():
    prev = offset({0: 10, 1: 20})
    sp = {(T1, ssp(1)): ResolvedStartpoint(position=999, creation_timestamp=1)}
    result = plan_next(prev, prev.job_model, marks(p0=(0, 10), p1=(0, 25)), startpoints=sp)
    assert result.offset.rebases[(T1, ssp(1))].position == 25


def test_expansion_adds_barriers_and_new_partitions_wait_for_their_sibling():
    prev = offset({0: 10, 1: 20})
    grown = model(4)
    wm = marks(p0=(0, 15), p1=(0, 20), p2=(0, 7), p3=(0, 4))
    first = plan_next(prev, grown, wm)
    off = first.offset
    # New partitions start at their earliest offset.
    assert off.rebases[(T0, ssp(2))].position == 0 and off.rebases[(T1, ssp(3))].position == 0
    # Partition 0 had not reached its end (15) when the batch started: partition 2 waits.
    (barrier,) = off.barriers[ssp(2)]
    assert barrier.feeders == {ssp(0): 15} and barrier.hold_at == 0
    assert off.positions[(T0, ssp(2))] == 0
    # Partition 1 was already drained to its end (20) when the batch started: partition 3 is read at once.
    assert ssp(3) in first.released_barriers and ssp(3) not in off.barriers
    assert off.positions[(T1, ssp(3))] == 4
    # The batch that drains partition 0 to 15 does not yet read partition 2 ...
    assert off.positions[(T0, ssp(0))] == 15
    # ... the next one does, because partition 0 started that batch drained.
    second = plan_next(off, grown, wm).offset
    assert second.barriers == {}
    assert second.positions[(T0, ssp(2))] == 7


def test_growth_that_is_not_a_multiple_of_the_previous_count_holds_old_partitions_at_the_cut():
    """4 -> 6 (initial 2): key hash 6 moves from partition 2 to partition 0, hash 8 from 0 to 2, so old
    partitions 0 and 2 feed each other; each is read up to its cut, and past it only once the other reached
    its own cut in an earlier batch."""
    prev = offset({0: 10, 1: 10, 2: 3, 3: 10}, count=4)
    grown = model(6)
    wm = marks(p0=(0, 20), p1=(0, 10), p2=(0, 9), p3=(0, 10), p4=(0, 5), p5=(0, 5))
    first = plan_next(prev, grown, wm).offset
    assert {f.partition for b in first.barriers[ssp(0)] for f in b.feeders} == {2}
    assert {f.partition for b in first.barriers[ssp(4)] for f in b.feeders} == {0, 2}
    # Cuts are the high watermarks seen: 0 reads up to 20, 2 up to 9; the new partitions wait.
    assert first.positions[(T0, ssp(0))] == 20 and first.positions[(T0, ssp(2))] == 9
    assert first.positions[(T0, ssp(4))] == 0
    # 1 and 3 were drained at the start of this batch: 5 is read at once, and 1/3 are free again.
    assert ssp(5) not in first.barriers and first.positions[(T1, ssp(5))] == 5
    more = marks(p0=(0, 25), p1=(0, 10), p2=(0, 12), p3=(0, 10), p4=(0, 8), p5=(0, 5))
    second = plan_next(first, grown, more).offset
    assert second.barriers == {}
    assert second.positions[(T0, ssp(0))] == 25 and second.positions[(T0, ssp(4))] == 8


def test_settle_time_keeps_feeders_draining_before_the_cut():
    """A producer with stale metadata keeps writing to the old partition: the cut waits ``settle_ms``."""
    prev = offset({0: 10, 1: 20})
    grown = model(4)
    wm = marks(p0=(0, 10), p1=(0, 20), p2=(0, 7), p3=(0, 4))
    first = plan_next(prev, grown, wm, now_ms=1_000, rules=PlanRules(settle_ms=60_000)).offset
    assert all(b.settling and b.settle_until == 61_000 for b in first.barriers[ssp(2)])
    assert first.positions[(T0, ssp(2))] == 0 and first.positions[(T1, ssp(3))] == 0
    stale = marks(p0=(0, 14), p1=(0, 21), p2=(0, 9), p3=(0, 4))
    second = plan_next(first, grown, stale, now_ms=30_000, rules=PlanRules(settle_ms=60_000)).offset
    assert second.positions[(T0, ssp(0))] == 14 and second.positions[(T0, ssp(2))] == 0
    later = marks(p0=(0, 16), p1=(0, 21), p2=(0, 9), p3=(0, 4))
    cut = plan_next(second, grown, later, now_ms=61_000, rules=PlanRules(settle_ms=60_000)).offset
    (barrier,) = cut.barriers[ssp(2)]
    assert barrier.feeders == {ssp(0): 16} and not barrier.settling
    assert cut.positions[(T0, ssp(0))] == 16 and cut.positions[(T0, ssp(2))] == 0
    released = plan_next(cut, grown, later, now_ms=62_000, rules=PlanRules(settle_ms=60_000)).offset
    assert released.barriers == {} and released.positions[(T0, ssp(2))] == 9


def test_no_ordering_reads_new_partitions_at_once():
    prev = offset({0: 10, 1: 20})
    wm = marks(p0=(0, 15), p1=(0, 20), p2=(0, 7), p3=(0, 4))
    result = plan_next(prev, model(4), wm, rules=PlanRules(ordering="none"))
    assert result.offset.barriers == {}
    assert result.offset.positions[(T0, ssp(2))] == 7


def test_data_loss_fails_naming_the_ssp_and_the_range():
    prev = offset({0: 10, 1: 20})
    with pytest.raises(DataLossError) as err:
        plan_next(prev, prev.job_model, marks(p0=(40, 50), p1=(0, 20)))
    assert "SystemStreamPartition [kafka, orders, 0]" in str(err.value)
    assert "10..39" in str(err.value)
    assert "failOnDataLoss=false" in str(err.value)


def test_data_loss_without_failing_continues_from_earliest_and_reports():
    prev = offset({0: 10, 1: 20})
    result = plan_next(prev, prev.job_model, marks(p0=(40, 50), p1=(0, 20)), rules=PlanRules(fail_on_data_loss=False))
    assert result.offset.rebases[(T0, ssp(0))].position == 40
    assert result.offset.positions[(T0, ssp(0))] == 50
    assert [(d.lost_from, d.lost_until) for d in result.data_loss] == [(10, 40)]


def test_until_caps_available_now_batches():
    prev = offset({0: 0, 1: 0})
    until = {ssp(0): 5, ssp(1): 3}
    result = plan_next(prev, prev.job_model, marks(p0=(0, 50), p1=(0, 20)), rules=PlanRules(until=until))
    assert result.offset.positions == {(T0, ssp(0)): 5, (T1, ssp(1)): 3}


def test_offset_json_round_trip_is_deterministic():
    prev = offset({0: 10, 1: 20})
    sp = {(T0, ssp(0)): ResolvedStartpoint(position=3, creation_timestamp=1000)}
    off = plan_next(prev, model(4), marks(p0=(0, 15), p1=(0, 20), p2=(0, 7), p3=(0, 4)), startpoints=sp).offset
    text = off.to_json_str()
    again = KafkaOffset.from_json_str(text)
    assert again == off
    assert again.to_json_str() == text


def test_a_feeder_still_held_by_an_earlier_growth_does_not_release_a_later_barrier():
    """2 -> 4, then 4 -> 8 before partition 2 (new in the first growth, empty) was released: partition 6's only
    feeder is partition 2, which "reached" its target at once (empty), but it has not yet delivered partition 0's
    moved keys; partition 6 stays held until partition 2's own barrier is gone (mutation check:
    release-ignores-earlier-growth)."""
    prev = offset({0: 10, 1: 20})
    first = plan_next(prev, model(4), marks(p0=(0, 15), p1=(0, 20), p2=(0, 0), p3=(0, 0)), max_rows=1).offset
    assert first.positions[(T0, ssp(0))] < 15 and ssp(2) in first.barriers  # partition 0 not drained yet
    wm8 = marks(p0=(0, 15), p1=(0, 20), **{f"p{p}": (0, 0) for p in range(2, 8)})
    second = plan_next(first, model(8), wm8, max_rows=1)
    assert ssp(2) in second.offset.barriers
    assert ssp(6) in second.offset.barriers and ssp(6) not in second.released_barriers
    assert {f for b in second.offset.barriers[ssp(6)] for f in b.feeders} == {ssp(2)}


def test_offsets_gone_backwards_are_data_loss():
    """The log was truncated (an unclean leader election; a re-created topic is told by its topic ID): the
    broker's end is below where the query stands. Fails with failOnDataLoss=true; else reported and read on from
    the new end, as Spark's source does, never re-reading offsets already delivered (mutation check:
    no-loss-offsets-backwards)."""
    prev = offset({0: 30, 1: 20})
    with pytest.raises(DataLossError, match="SystemStreamPartition \\[kafka, orders, 0\\]"):
        plan_next(prev, prev.job_model, marks(p0=(0, 5), p1=(0, 20)))
    result = plan_next(prev, prev.job_model, marks(p0=(0, 5), p1=(0, 20)), rules=PlanRules(fail_on_data_loss=False))
    assert result.offset.rebases[(T0, ssp(0))].position == 5
    assert result.offset.positions[(T0, ssp(0))] == 5
    assert [(d.lost_from, d.lost_until) for d in result.data_loss] == [(5, 30)]
