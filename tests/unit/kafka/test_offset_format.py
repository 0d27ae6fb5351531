"""The samza-kafka offset's JSON (format 3): about half the size of format 2, still deterministic, offsets of
earlier releases read as they were and known by their own text, damage detected, recently seen offsets not decoded
again."""

from __future__ import annotations

import json

import pytest

from spark_samza_source.core.errors import FormatVersionError, OffsetFormatError
from spark_samza_source.core.jobmodel import JobModel
from spark_samza_source.core.model import SystemStream, SystemStreamPartition, TaskName
from spark_samza_source.kafka.driver.offset import OFFSET_FORMAT_VERSION, Barrier, KafkaOffset, Rebase
from spark_samza_source.metadata.lease import offset_identity

T0, T1 = TaskName("Partition 0"), TaskName("Partition 1")
ID = "DlIswFcnQgmt82kSU66NsQ"
# Written by the previous release (format 2) for OFFSET below, byte for byte as its to_json_str() gave it.
V2_TEXT = (
    '{"applied":{"Partition 1":{"kafka.orders.1":1700000000000}},"barriers":{"kafka.orders.2":[{"feeders":'
    '{"kafka.orders.0":12},"grownTo":3,"holdAt":0,"settleUntil":null}]},"jobModel":{"broadcast":[],'
    '"initialPartitionCounts":{"kafka.orders":2},"tasks":{"Partition 0":[{"partition":0,"stream":"orders",'
    '"system":"kafka"},{"partition":2,"stream":"orders","system":"kafka"}],"Partition 1":[{"partition":1,'
    '"stream":"orders","system":"kafka"}]},"version":1},"positions":{"Partition 0":{"kafka.orders.0":10,'
    '"kafka.orders.2":3},"Partition 1":{"kafka.orders.1":20}},"rebases":{"Partition 0":{"kafka.orders.2":'
    '{"position":0,"reason":"new-partition"}}},"topicIds":{"orders":"DlIswFcnQgmt82kSU66NsQ"},"version":2}'
)


def ssp(p: int) -> SystemStreamPartition:
    return SystemStreamPartition("kafka", "orders", p)


MODEL = JobModel({T0: frozenset({ssp(0), ssp(2)}), T1: frozenset({ssp(1)})}, {SystemStream("kafka", "orders"): 2})
OFFSET = KafkaOffset(MODEL, {(T0, ssp(0)): 10, (T0, ssp(2)): 3, (T1, ssp(1)): 20},
                   rebases={(T0, ssp(2)): Rebase(0, "new-partition")},
                   barriers={ssp(2): (Barrier(3, 0, {ssp(0): 12}),)}, applied={(T1, ssp(1)): 1_700_000_000_000},
                   topic_ids={"orders": ID})


def spark_round_trip(value: dict) -> dict:
    """What Spark hands back: the offset log's JSON text, parsed again by its Python runner."""
    return json.loads(json.dumps(value))


def test_a_format_2_offset_reads_as_before_and_keeps_its_identity():
    old = KafkaOffset.from_json(json.loads(V2_TEXT))
    assert old == OFFSET
    # the lease knows a query by the digest of its offset's text: a query restarted after the upgrade still is
    assert old.canonical_text() == V2_TEXT and offset_identity(old.canonical_text()) == offset_identity(V2_TEXT)
    rewritten = old.to_json()
    assert rewritten["version"] == OFFSET_FORMAT_VERSION == 3
    assert KafkaOffset.from_json(spark_round_trip(rewritten)) == OFFSET


def test_format_3_spells_out_no_task_list_the_positions_give():
    plain = KafkaOffset(MODEL, OFFSET.positions)
    value = plain.to_json()
    assert value["applied"] == value["barriers"] == value["rebases"] == {}  # tools read them: written when empty
    assert value["jobModel"] == {"broadcast": [], "initialPartitionCounts": {"kafka.orders": 2}, "taskSsps": 3,
                                 "version": 1}
    assert KafkaOffset.from_json(spark_round_trip(value)) == plain
    assert len(OFFSET.to_json_str()) < 0.8 * len(V2_TEXT)
    wide = [ssp(p) for p in range(1000)]
    big = KafkaOffset(JobModel({TaskName(f"Partition {p}"): frozenset({s}) for p, s in enumerate(wide)},
                             {SystemStream("kafka", "orders"): 1000}),
                    {(TaskName(f"Partition {p}"), s): 10**9 for p, s in enumerate(wide)})
    format_2 = len(big.to_json_str()) + len(json.dumps(big.job_model.to_json()["tasks"], separators=(",", ":")))
    assert len(big.to_json_str()) < 0.55 * format_2


def test_the_task_list_is_written_when_the_positions_cannot_give_it():
    unpositioned = KafkaOffset(MODEL, {(T0, ssp(0)): 10, (T1, ssp(1)): 20})  # ssp 2 has no position yet
    value = unpositioned.to_json()
    assert "tasks" in value["jobModel"] and "taskSsps" not in value["jobModel"]
    assert KafkaOffset.from_json(spark_round_trip(value)) == unpositioned
    broadcast = JobModel({T0: frozenset({ssp(0), ssp(9)}), T1: frozenset({ssp(1), ssp(9)})},
                         {SystemStream("kafka", "orders"): 2}, frozenset({ssp(9)}))
    both = KafkaOffset(broadcast, {(T0, ssp(0)): 1, (T0, ssp(9)): 5, (T1, ssp(1)): 2, (T1, ssp(9)): 4})
    assert KafkaOffset.from_json(spark_round_trip(both.to_json())) == both


def test_the_json_is_deterministic_sorted_and_compact():
    again = KafkaOffset(MODEL, dict(reversed(list(OFFSET.positions.items()))), OFFSET.rebases, OFFSET.barriers,
                      OFFSET.applied, OFFSET.topic_ids)
    assert again.to_json_str() == OFFSET.to_json_str() == json.dumps(OFFSET.to_json(), sort_keys=True,
                                                                      separators=(",", ":"))
    assert list(OFFSET.to_json()) == sorted(OFFSET.to_json())


@pytest.mark.parametrize("damage", [
    lambda v: {**v, "positions": {}},
    lambda v: {**v, "positions": {"Partition 0": {"kafka.orders.0": 10}}},
    lambda v: {**v, "jobModel": {k: x for k, x in v["jobModel"].items() if k != "taskSsps"}},
])
def test_an_edited_or_damaged_format_3_offset_is_refused(damage):
    value = KafkaOffset(MODEL, OFFSET.positions).to_json()
    with pytest.raises(OffsetFormatError):
        KafkaOffset.from_json(damage(value))


def test_a_newer_format_is_refused_naming_the_upgrade():
    with pytest.raises(FormatVersionError, match="upgrade spark-samza-source on the driver"):
        KafkaOffset.from_json({**OFFSET.to_json(), "version": OFFSET_FORMAT_VERSION + 1})


def test_an_offset_seen_recently_is_not_decoded_again():
    planned = KafkaOffset(MODEL, {(T0, ssp(0)): 11, (T0, ssp(2)): 4, (T1, ssp(1)): 21}).remember()
    assert KafkaOffset.from_json(spark_round_trip(planned.to_json())) is planned
    decoded = KafkaOffset.from_json(json.loads(V2_TEXT))
    assert KafkaOffset.from_json(json.loads(V2_TEXT)) is decoded
