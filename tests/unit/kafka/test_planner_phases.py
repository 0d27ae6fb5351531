"""Each phase of the Kafka planner on its own: recreated topics, start positions, barriers and cuts, caps, the
next offset. ``test_planner.py`` checks them together through ``plan_next``."""

import pytest

from spark_samza_source.core.errors import DataLossError
from spark_samza_source.core.jobmodel import JobModel
from spark_samza_source.core.model import SystemStream, SystemStreamPartition, TaskName
from spark_samza_source.kafka.driver.offset import (
    REBASE_DATA_LOSS,
    REBASE_NEW_PARTITION,
    REBASE_NEW_TASK,
    REBASE_STARTPOINT,
    Barrier,
    KafkaOffset,
)
from spark_samza_source.kafka.driver.planner import (
    NonMultipleGrowth,
    PlanInputs,
    PlanRules,
    ResolvedStartpoint,
    StartPositions,
    barriers_and_cuts,
    carried_start,
    checked_against_log,
    cut_settled,
    due_startpoint,
    next_offset,
    non_multiple_growths,
    read_caps,
    recreated_in_model,
    start_positions,
    startpoint_start,
)
from spark_samza_source.kafka.positions import Watermarks

T0, T1 = TaskName("Partition 0"), TaskName("Partition 1")


def ssp(p, stream="orders"):
    return SystemStreamPartition("kafka", stream, p)


def model(count, initial=2, broadcast=frozenset()):
    tasks = {T0: set(), T1: set()}
    for p in range(count):
        tasks[T0 if p % 2 == 0 else T1].add(ssp(p))
    for b in broadcast:
        tasks[T0].add(b)
        tasks[T1].add(b)
    return JobModel(tasks, {SystemStream("kafka", "orders"): initial}, broadcast=frozenset(broadcast))


def offset(positions, count=2, **kw):
    jm = model(count)
    return KafkaOffset(jm, {(jm.tasks_for(ssp(p))[0], ssp(p)): v for p, v in positions.items()}, **kw)


def inputs(previous, job_model=None, marks=None, **kw):
    rules = kw.pop("rules", PlanRules())
    return PlanInputs(previous, job_model or previous.job_model, marks or {}, kw.pop("startpoints", {}),
                      kw.pop("topic_ids", {}), kw.pop("now_ms", 0), rules)


W = Watermarks(5, 50)


def test_recreated_in_model_names_only_the_model_topics_and_fails_by_default():
    prev = offset({0: 10, 1: 20}, topic_ids={"orders": "A", "other": "X"})
    seen = {"orders": "B", "other": "Y"}
    with pytest.raises(DataLossError, match="topic 'orders' was deleted and re-created"):
        recreated_in_model(inputs(prev, topic_ids=seen))
    lenient = inputs(prev, topic_ids=seen, rules=PlanRules(fail_on_data_loss=False))
    assert recreated_in_model(lenient) == {"orders": ("A", "B")}
    assert recreated_in_model(inputs(prev, topic_ids={"orders": "A"})) == {}


def test_due_startpoint_is_one_newer_than_the_last_applied():
    key = (T0, ssp(0))
    prev = offset({0: 10, 1: 20}, applied={key: 100})
    old, new = ResolvedStartpoint(3, 100), ResolvedStartpoint(3, 101)
    assert due_startpoint(inputs(prev, startpoints={key: old}), key) is None
    assert due_startpoint(inputs(prev, startpoints={key: new}), key) == new
    assert due_startpoint(inputs(prev), key) is None


def test_startpoint_start_clamps_into_the_log_and_records_the_rebase():
    start = startpoint_start(ResolvedStartpoint(1, 7), W, (T0, ssp(0)))
    assert (start.position, start.rebase.reason, start.rebase.position) == (5, REBASE_STARTPOINT, 5)
    assert startpoint_start(ResolvedStartpoint(60, 7), W, (T0, ssp(0))).position == 50
    assert startpoint_start(ResolvedStartpoint(9, 7), W, (T0, ssp(0))).position == 9


def test_carried_start_own_position_moved_ssp_broadcast_and_new_partition():
    prev = offset({0: 10, 1: 20})
    assert carried_start(inputs(prev), (T0, ssp(0)), W).position == 10
    moved = carried_start(inputs(prev), (T1, ssp(0)), W)  # moved to another task: progress moves along
    assert (moved.position, moved.rebase) == (10, None)
    broadcast = carried_start(inputs(prev, model(2, broadcast={ssp(0)})), (T1, ssp(0)), W)
    assert (broadcast.position, broadcast.rebase.reason) == (10, REBASE_NEW_TASK)
    new = carried_start(inputs(prev, model(4)), (T0, ssp(2)), W)
    assert (new.position, new.rebase.reason) == (5, REBASE_NEW_PARTITION)


def test_checked_against_log_keeps_a_start_inside_and_reports_one_outside():
    """Backs Guarantees (docs/guarantees.md, answers that contradict each other): a log end below the committed
    position is data loss, raised or (failOnDataLoss=false) reported."""
    prev = offset({0: 10, 1: 20})
    inside = carried_start(inputs(prev), (T0, ssp(0)), W)
    assert checked_against_log(inside, (T0, ssp(0)), W, True) is inside
    below = carried_start(inputs(prev), (T0, ssp(0)), Watermarks(40, 50))
    with pytest.raises(DataLossError, match="10..39"):
        checked_against_log(below, (T0, ssp(0)), Watermarks(40, 50), True)
    lost = checked_against_log(below, (T0, ssp(0)), Watermarks(40, 50), False)
    assert (lost.position, lost.rebase.reason, lost.loss.lost_from, lost.loss.lost_until) == (
        40, REBASE_DATA_LOSS, 10, 40)
    # past the end (an unclean leader election cut the log back): on from the new end, never a delivered offset
    # again (Spark's source does the same); re-reading from 0 delivered offsets 0..3 twice
    past = checked_against_log(inside, (T0, ssp(0)), Watermarks(0, 4), False)
    assert (past.position, past.loss.lost_from, past.loss.lost_until) == (4, 4, 10)
    with pytest.raises(DataLossError, match="past the end of the log"):
        checked_against_log(inside, (T0, ssp(0)), Watermarks(0, 4), True)


def test_start_positions_unreported_ssp_keeps_its_position_and_is_missing():
    prev = offset({0: 10, 1: 20})
    with pytest.raises(DataLossError, match="no longer reports it"):
        start_positions(inputs(prev, marks={ssp(0): W}), {})
    lenient = inputs(prev, marks={ssp(0): W}, rules=PlanRules(fail_on_data_loss=False))
    starts = start_positions(lenient, {})
    assert starts.starts == {(T0, ssp(0)): 10, (T1, ssp(1)): 20}
    assert starts.missing == {ssp(1)} and starts.rebases == {}


def test_start_positions_recreated_topic_restarts_at_the_log_start_and_startpoints_win():
    prev = offset({0: 10, 1: 20}, applied={(T1, ssp(1)): 1})
    sp = ResolvedStartpoint(7, 2)
    got = start_positions(inputs(prev, marks={ssp(0): W, ssp(1): W}, startpoints={(T1, ssp(1)): sp}),
                          {"orders": ("A", "B")})
    assert got.starts == {(T0, ssp(0)): 5, (T1, ssp(1)): 7}
    assert got.rebases[(T0, ssp(0))].reason == REBASE_DATA_LOSS
    assert got.rebases[(T1, ssp(1))].reason == REBASE_STARTPOINT
    assert got.applied == {(T1, ssp(1)): 2} and got.newly_applied == {(T1, ssp(1)): sp}


def test_start_positions_forget_applied_startpoints_of_ssps_no_longer_read():
    gone = (T0, ssp(7))
    prev = offset({0: 10, 1: 20}, applied={gone: 5, (T0, ssp(0)): 6})
    got = start_positions(inputs(prev, marks={ssp(0): W, ssp(1): W}), {})
    assert got.applied == {(T0, ssp(0)): 6}


def test_lowest_start_of_a_broadcast_ssp_is_the_lowest_over_its_tasks():
    starts = StartPositions({(T0, ssp(0)): 9, (T1, ssp(0)): 4, (T1, ssp(1)): 3})
    assert starts.lowest() == {ssp(0): 4, ssp(1): 3}


def test_barriers_and_cuts_add_one_per_grown_partition_only_under_drain_first():
    prev = offset({0: 10, 1: 20})
    marks = {ssp(p): Watermarks(0, 30) for p in range(4)}
    grown = inputs(prev, model(4), marks)
    starts = start_positions(grown, {})
    plan = barriers_and_cuts(grown, starts)
    assert set(plan.new) == {ssp(2), ssp(3)} and plan.released == ()
    (barrier,) = plan.barriers[ssp(2)]
    assert barrier.hold_at == 0 and barrier.feeders == {ssp(0): 30}  # no settle time: cut at once
    free = inputs(prev, model(4), marks, rules=PlanRules(ordering="none"))
    assert barriers_and_cuts(free, starts).barriers == {}


def test_cut_settled_cuts_only_barriers_whose_settle_time_ended():
    settling = Barrier(4, 0, {ssp(0): None}, 100)
    barriers = {ssp(2): (settling,)}
    assert cut_settled(barriers, 99, lambda s: 42) == barriers
    (cut,) = cut_settled(barriers, 100, lambda s: 42 + s.partition)[ssp(2)]
    assert not cut.settling and cut.feeders == {ssp(0): 42}


def test_read_caps_missing_ssps_until_and_barrier_holds():
    prev = offset({0: 10, 1: 20})
    marks = {ssp(0): Watermarks(0, 50), ssp(1): Watermarks(0, 50)}
    starts = StartPositions({(T0, ssp(0)): 10, (T1, ssp(1)): 20})
    assert read_caps(inputs(prev, marks=marks), starts, {}) == {(T0, ssp(0)): 50, (T1, ssp(1)): 50}
    capped = inputs(prev, marks=marks, rules=PlanRules(until={ssp(0): 30}))
    assert read_caps(capped, starts, {}) == {(T0, ssp(0)): 30, (T1, ssp(1)): 20}  # not in until: not read
    held = {ssp(0): (Barrier(4, 12, {ssp(1): 50}),)}
    assert read_caps(inputs(prev, marks=marks), starts, held)[(T0, ssp(0))] == 12
    missing = StartPositions({(T0, ssp(0)): 10, (T1, ssp(1)): 20}, missing=frozenset({ssp(1)}))
    assert read_caps(inputs(prev, marks=marks), missing, {})[(T1, ssp(1))] == 20


def test_next_offset_hands_back_previous_when_nothing_moved_and_records_topic_ids():
    prev = offset({0: 10, 1: 20}, topic_ids={"orders": "A"})
    same = StartPositions({(T0, ssp(0)): 10, (T1, ssp(1)): 20})
    assert next_offset(inputs(prev, topic_ids={"orders": "B"}), same, {}, same.starts) is prev
    moved = next_offset(inputs(prev), same, {}, {(T0, ssp(0)): 15, (T1, ssp(1)): 20})
    assert moved is not prev and moved.positions[(T0, ssp(0))] == 15 and moved.topic_ids == {"orders": "A"}


@pytest.mark.parametrize(("before", "after", "uneven"), [(2, 4, False), (4, 6, True), (4, 8, False), (2, 2, False),
                                                          (4, 12, False), (6, 8, True)])
def test_non_multiple_growths_name_a_growth_that_is_not_a_multiple_of_the_previous_count(before, after, uneven):
    rules = PlanRules(settle_ms=30_000)
    found = non_multiple_growths(inputs(offset({0: 1}, count=before), model(after), now_ms=1_000, rules=rules))
    orders = SystemStream("kafka", "orders")
    assert found == ([NonMultipleGrowth(orders, before, after, 1_000, 31_000)] if uneven else [])
