"""Kafka's starting strategies, pure: the watermarks and the offsets-for-times lookup are handed in, no broker.

The same rules run against the development broker in tests/integration/kafka/test_source_starting.py; here each
strategy is checked on its own, including the cases a broker makes hard to set up (a start past the log end and
one below the log start in the same option, a lookup that finds nothing).
"""

import logging
import pickle

import pytest

from spark_samza_source.core.errors import ConfigError, DataLossError, InternalError
from spark_samza_source.core.jobmodel import JobModel
from spark_samza_source.core.model import SystemStream, SystemStreamPartition, TaskName
from spark_samza_source.kafka.options import DEFAULT_STARTING_OFFSETS
from spark_samza_source.kafka.positions import DataLoss, Watermarks
from spark_samza_source.kafka.starting import (
    ByTimestamp,
    Earliest,
    Latest,
    SpecificOffsets,
    Starts,
)


def specific(per_partition) -> SpecificOffsets:
    return SpecificOffsets(per_partition, option="startingOffsets")


#: the options a ByTimestamp of the starting options names in its messages
BY_TIMESTAMP = {"option": "startingOffsetsByTimestamp", "strategy_option": "startingOffsetsByTimestampStrategy"}
T0, T1 = TaskName("Partition 0"), TaskName("Partition 1")


def ssp(p, stream="orders"):
    return SystemStreamPartition("kafka", stream, p)


# orders 0, 2 in task 0; orders 1 in task 1; the broadcast config 0 in both
MODEL = JobModel({T0: {ssp(0), ssp(2), ssp(0, "config")}, T1: {ssp(1), ssp(0, "config")}},
                 {SystemStream("kafka", "orders"): 3, SystemStream("kafka", "config"): 1},
                 frozenset({ssp(0, "config")}))
MARKS = {ssp(0): Watermarks(10, 50), ssp(1): Watermarks(0, 5), ssp(2): Watermarks(7, 7),
         ssp(0, "config"): Watermarks(3, 4)}


def no_lookup(query):
    raise AssertionError(f"offsets_for_times called with {query}")


def lookup(found, asked=None):
    def offsets_for_times(query):
        if asked is not None:
            asked.append(dict(query))
        return {tp: found.get(tp) for tp in query}

    return offsets_for_times


def starts(strategy, offsets_for_times=no_lookup, *, fail_on_data_loss=True, assigned=None) -> Starts:
    return strategy.starts(MODEL, MARKS, offsets_for_times, fail_on_data_loss=fail_on_data_loss, assigned=assigned)


def test_earliest_and_latest_start_every_ssp_at_a_watermark_without_a_lookup():
    assert starts(Earliest()) == Starts({ssp(0): 10, ssp(1): 0, ssp(2): 7, ssp(0, "config"): 3})
    assert starts(Latest()) == Starts({ssp(0): 50, ssp(1): 5, ssp(2): 7, ssp(0, "config"): 4})
    assert DEFAULT_STARTING_OFFSETS == Latest()


def test_specific_offsets_named_earliest_latest_and_unnamed():
    got = starts(specific({"orders": {0: 20, 1: -2, 2: -1}}))
    # partitions not named (config 0) start at latest, as Spark's
    assert got == Starts({ssp(0): 20, ssp(1): 0, ssp(2): 7, ssp(0, "config"): 4})
    # the watermarks themselves are valid starts
    assert starts(specific({"orders": {0: 10, 1: 5}})).positions[ssp(0)] == 10
    assert starts(specific({"orders": {0: 10, 1: 5}})).positions[ssp(1)] == 5


def test_specific_offsets_past_the_log_end_fail_naming_every_one():
    with pytest.raises(ConfigError) as err:
        starts(specific({"orders": {0: 51, 2: 8}}))
    message = str(err.value)
    assert message.startswith("[SAMZA_INVALID_OPTION] option 'startingOffsets' names offsets beyond the end of their "
                              "partition's log")
    assert "orders partition 0: offset 51 (log end 50); orders partition 2: offset 8 (log end 7)" in message
    assert "-1 for latest, -2 for earliest" in message


def test_a_specific_offset_below_the_log_start_stops_the_query_naming_the_lost_range():
    with pytest.raises(DataLossError) as err:
        starts(specific({"orders": {0: 4}}))
    message = str(err.value)
    assert "option 'startingOffsets' asks to start SystemStreamPartition [kafka, orders, 0] at offset 4" in message
    assert "offsets 4..9 are no longer available" in message and "(task Partition 0)" in message
    assert "give -2 (earliest)" in message and "set failOnDataLoss=false to go on from offset 10" in message


def test_a_specific_offset_below_the_log_start_starts_at_it_and_is_reported_with_fail_on_data_loss_false(caplog):
    with caplog.at_level(logging.WARNING, logger="spark_samza_source.kafka.starting"):
        got = starts(specific({"orders": {0: 4}, "config": {0: 1}}), fail_on_data_loss=False)
    assert got.positions[ssp(0)] == 10 and got.positions[ssp(0, "config")] == 3
    # a broadcast SSP's loss is reported once, under its first task
    assert got.data_loss == (DataLoss(ssp(0, "config"), T0, 1, 3), DataLoss(ssp(0), T0, 4, 10))
    lines = [r.getMessage() for r in caplog.records]
    assert any(line.startswith("data loss: startingOffsets asks for offset 4 of SystemStreamPartition "
                               "[kafka, orders, 0]") and line.endswith("starting at offset 10") for line in lines)


def test_a_loss_found_before_an_offset_past_the_end_stops_the_query_first():
    # SSPs are visited in order; the loss raises at once, offsets past the end are collected and raised after
    with pytest.raises(DataLossError):
        starts(specific({"orders": {0: 4, 1: 99}}))
    with pytest.raises(ConfigError, match="beyond the end"):
        starts(specific({"orders": {0: 4, 1: 99}}), fail_on_data_loss=False)


@pytest.mark.parametrize(("strategy", "option"), [
    (specific({"orders": {0: -2, 7: 3, 9: 1}}), "startingOffsets"),
    (ByTimestamp(**BY_TIMESTAMP, per_partition={"orders": {0: 1, 7: 1, 9: 1}}), "startingOffsetsByTimestamp"),
])
def test_a_named_partition_the_query_does_not_read_fails_as_spark_says_it(strategy, option):
    with pytest.raises(ConfigError) as err:
        starts(strategy, lookup({}))
    message = str(err.value)
    assert message.startswith(f"[SAMZA_INVALID_OPTION] option '{option}' names partitions this query does not read: ")
    assert "topic 'orders' has no partition 7, 9 among those read (0-2)" in message
    assert 'Specified: {"orders": [0, 7, 9]} Assigned: {"config": "0", "orders": "0-2"}' in message


def test_a_named_topic_the_query_does_not_read_fails():
    with pytest.raises(ConfigError, match="topic 'payments' is not read by this query"):
        starts(specific({"payments": {0: 1}}))


def test_assigned_names_what_the_query_reads_beyond_the_model():
    # a restored job model may lack partitions added since: they are read (assigned), so they may be named
    assigned = sorted(MODEL.ssps()) + [ssp(3), ssp(5)]
    got = starts(specific({"orders": {3: 1, 5: 2}}), assigned=assigned)
    assert ssp(3) not in got.positions  # started by the first plan, as an expansion
    with pytest.raises(ConfigError, match=r"has no partition 4 among those read \(0-3,5\)"):
        starts(specific({"orders": {4: 1}}), assigned=assigned)


def test_by_timestamp_for_every_partition_asks_once_and_starts_at_what_it_finds():
    asked = []
    found = {("orders", 0): 30, ("orders", 1): 2, ("orders", 2): 7, ("config", 0): 3}
    got = starts(ByTimestamp(**BY_TIMESTAMP, timestamp_ms=1_700_000_000_000), lookup(found, asked))
    assert got == Starts({ssp(0): 30, ssp(1): 2, ssp(2): 7, ssp(0, "config"): 3})
    assert asked == [{tp: 1_700_000_000_000 for tp in [("config", 0), ("orders", 0), ("orders", 1), ("orders", 2)]}]


def test_by_timestamp_per_partition_starts_the_others_at_latest_and_skips_an_empty_lookup():
    asked = []
    got = starts(ByTimestamp(**BY_TIMESTAMP, per_partition={"orders": {1: 99}}), lookup({("orders", 1): 3}, asked))
    assert got == Starts({ssp(0): 50, ssp(1): 3, ssp(2): 7, ssp(0, "config"): 4})
    assert asked == [{("orders", 1): 99}]
    assert starts(ByTimestamp(**BY_TIMESTAMP, per_partition={})) == starts(Latest())  # nothing to look up: no call


@pytest.mark.parametrize("found", [None, -1])
def test_no_record_at_or_after_the_timestamp_fails_or_starts_at_the_end_as_the_strategy_says(found):
    finds = lookup({("orders", 0): found, ("orders", 1): 1, ("orders", 2): 7, ("config", 0): 3})
    with pytest.raises(ConfigError) as err:
        starts(ByTimestamp(**BY_TIMESTAMP, timestamp_ms=5), finds)
    assert str(err.value) == (
        "[SAMZA_INVALID_OPTION] no record at or after timestamp 5 in SystemStreamPartition [kafka, orders, 0]; "
        "the starting timestamp "
        "option cannot be honoured. Use an earlier timestamp, or set startingOffsetsByTimestampStrategy=latest to "
        "start such partitions at the end")
    assert starts(ByTimestamp(**BY_TIMESTAMP, timestamp_ms=5, strategy="latest"), finds).positions[ssp(0)] == 50


def test_by_timestamp_takes_one_form_and_a_known_strategy():
    # the option reader gives it one form and a strategy of its OneOf: anything else is a bug of ours
    with pytest.raises(InternalError, match="not both"):
        ByTimestamp(**BY_TIMESTAMP, timestamp_ms=1, per_partition={"orders": {0: 1}})
    with pytest.raises(InternalError, match="strategy must be one of"):
        ByTimestamp(**BY_TIMESTAMP, timestamp_ms=1, strategy="earliest")


@pytest.mark.parametrize("strategy", [Earliest(), Latest(), specific({"orders": {0: 5}}),
                                      ByTimestamp(**BY_TIMESTAMP, timestamp_ms=3, strategy="latest"),
                                      ByTimestamp(**BY_TIMESTAMP, per_partition={"orders": {1: 2}})])
def test_a_strategy_is_a_plain_value_that_travels_with_the_options(strategy):
    assert pickle.loads(pickle.dumps(strategy)) == strategy
