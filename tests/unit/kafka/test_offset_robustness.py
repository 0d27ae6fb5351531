"""Offsets samza-kafka must never misread, in the pure core: topic IDs in the offset (optional, old offsets still
load) and the planner's handling of a re-created topic; offsets whose positions were emptied; a position past the
log end."""

import json

import pytest

from spark_samza_source.core.errors import DataLossError, OffsetFormatError
from spark_samza_source.core.jobmodel import JobModel
from spark_samza_source.core.model import SystemStream, SystemStreamPartition, TaskName
from spark_samza_source.kafka.driver.offset import REBASE_DATA_LOSS, KafkaOffset
from spark_samza_source.kafka.driver.planner import PlanRules, plan_next
from spark_samza_source.kafka.positions import Watermarks

T0, T1 = TaskName("Partition 0"), TaskName("Partition 1")
OLD_ID, NEW_ID = "DlIswFcnQgmt82kSU66NsQ", "q2Lx0cN7R8m1Ow6b0Wq6nA"


def ssp(p, stream="orders"):
    return SystemStreamPartition("kafka", stream, p)


def offset(positions, **kw):
    jm = JobModel({T0: {ssp(0)}, T1: {ssp(1)}}, {SystemStream("kafka", "orders"): 2})
    return KafkaOffset(jm, {(T0 if p == 0 else T1, ssp(p)): v for p, v in positions.items()}, **kw)


MARKS = {ssp(0): Watermarks(0, 40), ssp(1): Watermarks(0, 40)}


def test_an_offset_without_topic_ids_loads_and_is_written_exactly_as_before():
    old = offset({0: 10, 1: 20}).to_json()
    assert "topicIds" not in old
    again = KafkaOffset.from_json(json.loads(json.dumps(old)))
    assert again.topic_ids == {} and again.to_json() == old


def test_topic_ids_round_trip():
    with_ids = offset({0: 10, 1: 20}, topic_ids={"orders": OLD_ID})
    assert with_ids.to_json()["topicIds"] == {"orders": OLD_ID}
    assert KafkaOffset.from_json(with_ids.to_json()).topic_ids == {"orders": OLD_ID}
    with pytest.raises(OffsetFormatError, match="'topicIds' must be an object"):
        KafkaOffset.from_json({**with_ids.to_json(), "topicIds": {"orders": 5}})


def test_a_recreated_topic_is_data_loss_naming_the_topic():
    prev = offset({0: 10, 1: 20}, topic_ids={"orders": OLD_ID})
    with pytest.raises(DataLossError) as err:
        plan_next(prev, prev.job_model, MARKS, topic_ids={"orders": NEW_ID})
    message = str(err.value)
    assert "topic 'orders' was deleted and re-created" in message and NEW_ID in message and OLD_ID in message
    assert "failOnDataLoss=false" in message


def test_a_recreated_topic_is_read_from_its_start_and_reported_with_fail_on_data_loss_false():
    prev = offset({0: 10, 1: 20}, topic_ids={"orders": OLD_ID})
    result = plan_next(prev, prev.job_model, MARKS, topic_ids={"orders": NEW_ID},
                       rules=PlanRules(fail_on_data_loss=False))
    assert result.recreated == {"orders": (OLD_ID, NEW_ID)}
    assert {k[1].partition: (r.position, r.reason) for k, r in result.offset.rebases.items()} == {
        0: (0, REBASE_DATA_LOSS), 1: (0, REBASE_DATA_LOSS)}
    assert result.offset.topic_ids == {"orders": NEW_ID}


def test_the_same_topic_id_or_none_recorded_is_no_recreation_and_ids_alone_plan_no_batch():
    prev = offset({0: 40, 1: 40})
    assert plan_next(prev, prev.job_model, MARKS, topic_ids={"orders": NEW_ID}).offset is prev
    known = offset({0: 10, 1: 20}, topic_ids={"orders": OLD_ID})
    result = plan_next(known, known.job_model, MARKS, topic_ids={"orders": OLD_ID})
    assert result.recreated == {} and result.offset.rebases == {}


def test_empty_positions_are_refused_instead_of_re_reading_every_partition():
    damaged = {**offset({0: 10, 1: 20}).to_json(), "positions": {}}
    refused = r"'positions' is empty while the job model has 2 \(task, SSP\) pair\(s\)"
    with pytest.raises(OffsetFormatError, match=refused):
        KafkaOffset.from_json(damaged)
    # format 2 spelled the tasks out
    v2 = {**damaged, "version": 2, "jobModel": offset({0: 10, 1: 20}).job_model.to_json()}
    with pytest.raises(OffsetFormatError, match=r"'positions' is empty while the job model has 2 task\(s\)"):
        KafkaOffset.from_json(v2)


def test_a_position_past_the_log_end_does_not_advise_reading_from_the_earliest_offset():
    prev = offset({0: 500, 1: 20})
    with pytest.raises(DataLossError) as err:
        plan_next(prev, prev.job_model, MARKS)
    message = str(err.value)
    assert "the position to read next, 500, is past the end of the log (40" in message
    assert "continue from the earliest available offset" not in message and "StartpointUpcoming" in message


def test_without_streams_removes_a_stream_and_the_tasks_left_empty_keeping_the_others():
    jm = JobModel({T0: {ssp(0), ssp(0, "old")}, T1: {ssp(1)}, TaskName("Partition 2"): {ssp(2, "old")}},
                  {SystemStream("kafka", "orders"): 2, SystemStream("kafka", "old"): 3}, frozenset())
    dropped = jm.without_streams(["old"])
    assert dropped.tasks == {T0: frozenset({ssp(0)}), T1: frozenset({ssp(1)})}
    assert dropped.initial_partition_counts == {SystemStream("kafka", "orders"): 2}


def test_position_of_is_the_lowest_position_of_an_ssp_in_any_task_and_survives_a_json_round_trip():
    """A broadcast SSP has one position per task: a task that takes it over starts at the least read of them."""
    shared = ssp(0, "config")
    jm = JobModel({T0: {ssp(0), shared}, T1: {ssp(1), shared}}, {SystemStream("kafka", "orders"): 2},
                  broadcast=frozenset({shared}))
    off = KafkaOffset(jm, {(T0, ssp(0)): 10, (T1, ssp(1)): 20, (T0, shared): 7, (T1, shared): 3})
    assert [off.position_of(s) for s in (ssp(0), ssp(1), shared, ssp(2))] == [10, 20, 3, None]
    again = KafkaOffset.from_json(json.loads(json.dumps(off.to_json())))
    assert again == off and again.position_of(shared) == 3
