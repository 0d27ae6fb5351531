"""Data loss, subscribePattern discovery, co-partition checks and bad options, through real queries."""

import pytest

from samza_devkit.kafka_helpers import create_topic, delete_records_before, produce, unique_topic

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_deleted_records_fail_the_query_naming_the_ssp_and_range(kq):
    topic = create_topic(kq.bootstrap, unique_topic("loss"), 1)
    produce(kq.bootstrap, topic, [(b"k", f"{i}".encode()) for i in range(10)])
    kq.run_available_now_parquet("loss", subscribe=topic)
    produce(kq.bootstrap, topic, [(b"k", f"{i}".encode()) for i in range(10, 30)])
    delete_records_before(kq.bootstrap, topic, 0, 25)
    with pytest.raises(Exception) as err:
        kq.run_available_now_parquet("loss", subscribe=topic)
    message = str(err.value)
    assert f"SystemStreamPartition [kafka, {topic}, 0]" in message
    assert "offsets 10..24" in message and "failOnDataLoss=false" in message


def test_deleted_records_are_skipped_with_fail_on_data_loss_false(kq, caplog):
    topic = create_topic(kq.bootstrap, unique_topic("loss2"), 1)
    produce(kq.bootstrap, topic, [(b"k", f"{i}".encode()) for i in range(10)])
    kq.run_available_now_parquet("loss2", subscribe=topic, failOnDataLoss="false")
    produce(kq.bootstrap, topic, [(b"k", f"{i}".encode()) for i in range(10, 30)])
    delete_records_before(kq.bootstrap, topic, 0, 25)
    kq.run_available_now_parquet("loss2", subscribe=topic, failOnDataLoss="false")
    assert sorted(r.offset for r in kq.sink_rows("loss2")) == list(range(10)) + list(range(25, 30))


def test_subscribe_pattern_reads_a_topic_created_mid_run_from_earliest(kq):
    prefix = unique_topic("pat")
    first = create_topic(kq.bootstrap, f"{prefix}-a", 1)
    produce(kq.bootstrap, first, [(b"k", b"a")])
    query = kq.start_collecting("pat", subscribePattern=f"{prefix}-.*", startingOffsets="latest")
    kq.wait_for(lambda: len(kq.batches.get("pat", [])) >= 1 or query.lastProgress, what="query running")
    second = create_topic(kq.bootstrap, f"{prefix}-b", 2)
    produce(kq.bootstrap, second, [(b"k", f"{i}".encode(), None, i % 2) for i in range(6)])
    kq.wait_for(lambda: len(kq.collected("pat")) >= 6, what="new topic read")
    query.stop()
    rows = kq.collected("pat")
    assert sorted((r.topic, r.partition, r.offset) for r in rows) == sorted(
        (second, p, o) for p in range(2) for o in range(3)
    )


def test_copartition_of_3_and_4_partitions_fails_before_reading(kq):
    a = create_topic(kq.bootstrap, unique_topic("cp-a"), 3)
    b = create_topic(kq.bootstrap, unique_topic("cp-b"), 4)
    with pytest.raises(Exception) as err:
        kq.run_available_now_parquet("cp", subscribe=f"{a},{b}", copartition=f"{a},{b}")
    message = str(err.value)
    assert a in message and b in message and "3" in message and "4" in message
    assert kq.sink_rows("cp") == []


def test_bad_option_fails_the_query_with_our_message(kq):
    with pytest.raises(Exception) as err:
        kq.stream(subscribe="x", maxOffsetsPerTrigger="-5").writeStream.format("noop").start()
    assert "'maxOffsetsPerTrigger' must be at least 1, got -5" in str(err.value)
