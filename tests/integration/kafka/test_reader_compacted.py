"""read_ranges over a compacted partition (no Spark): ranges that end in a gap or lie wholly in one finish at
once, a gap is never data loss, records deleted before they were read still are.

Offsets 0..10 compacted to 4 b, 6 c, 7 e (tombstone), 8 a, 9 d, 10 f (gaps 0..3 and 5). The stall timeout is short, so a
reader that waited at a gap fails with the stall error rather than hanging the test.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from samza_devkit.compaction_helpers import GAPPED_SURVIVORS, compacted_partition
from samza_devkit.kafka_helpers import delete_records_before
from spark_samza_source.kafka.errors import KafkaDataLossError
from spark_samza_source.kafka.executor.reader import read_ranges
from spark_samza_source.kafka.input_partition import KafkaRange

SURVIVORS = GAPPED_SURVIVORS


@pytest.fixture(scope="module")
def compacted(kafka_broker):
    return compacted_partition(kafka_broker, "rd-compacted")


@pytest.fixture
def cache(new_reader_cache):
    """A private cache of one read path's consumers: every test here runs on the native and the Python reader."""
    c = new_reader_cache(2)
    yield c
    c.close_all()


def read_offsets(broker, topic, start, end, cache, fail=True) -> list[int]:
    batches = list(read_ranges({"bootstrap.servers": broker.bootstrap_servers}, "Partition 0",
                               [KafkaRange(topic, 0, start, end)], include_headers=False, fail_on_data_loss=fail,
                               poll_timeout_ms=20_000, cache=cache))
    return pa.Table.from_batches(batches).column("offset").to_pylist() if batches else []


@pytest.mark.parametrize(("start", "end", "expected"), [
    (0, 3, []),                 # wholly inside the gap 0..3
    (0, 6, [4]),                # ends in the gap at 5
    (3, 5, [4]),                # starts in a gap, ends right after a record
    (5, 10, [6, 7, 8, 9]),      # starts in the gap at 5
    (0, 11, SURVIVORS),
])
def test_ranges_in_and_around_gaps_read_exactly_the_survivors(kafka_broker, compacted, cache, start, end, expected):
    assert read_offsets(kafka_broker, compacted, start, end, cache) == expected


def test_deleted_records_are_loss_on_a_compacted_partition_and_gaps_are_not(kafka_broker, cache):
    topic = compacted_partition(kafka_broker, "rd-compacted", "compact,delete")
    assert read_offsets(kafka_broker, topic, 0, 11, cache) == SURVIVORS  # failOnDataLoss: gaps are not loss
    delete_records_before(kafka_broker.bootstrap_servers, topic, 0, 8)  # the log now starts at 8
    with pytest.raises(KafkaDataLossError, match=r"offsets 6\.\.7 \(2 records\)"):
        read_offsets(kafka_broker, topic, 6, 10, cache)
    assert read_offsets(kafka_broker, topic, 6, 10, cache, fail=False) == [8, 9]
