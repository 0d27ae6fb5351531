"""read_ranges over a transactional partition (no Spark), on both read paths: markers are never rows, ranges that
end on a marker or hold only markers and aborted records finish at once, and ``read_committed`` drops aborted
records while ``read_uncommitted`` returns them.

One partition: a committed transaction at offsets 0..2 (marker 3), an aborted one at 4..5 (marker 6), a committed
one at 7..8 (marker 9). The stall timeout is short, so a reader that waited for a record at ``end - 1`` fails with
the stall error rather than hanging the test.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from samza_devkit.kafka_helpers import create_topic, produce_in_transaction, transactional_producer, unique_topic
from spark_samza_source.kafka.executor.reader import read_ranges
from spark_samza_source.kafka.input_partition import KafkaRange

COMMITTED = [0, 1, 2, 7, 8]
ABORTED = [4, 5]


@pytest.fixture(scope="module")
def txn_topic(kafka_broker):
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap, unique_topic("rd-txn"), 1)
    producer = transactional_producer(bootstrap)
    assert produce_in_transaction(producer, topic, [(b"k", b"c0", 0), (b"k", b"c1", 0), (b"k", b"c2", 0)]) == [0, 1, 2]
    assert produce_in_transaction(producer, topic, [(b"k", b"a4", 0), (b"k", b"a5", 0)], end="abort") == ABORTED
    assert produce_in_transaction(producer, topic, [(b"k", b"c7", 0), (b"k", b"c8", 0)]) == [7, 8]
    return topic


def read_offsets(broker, topic: str, start: int, end: int, cache, isolation: str) -> list[int]:
    conf = {"bootstrap.servers": broker.bootstrap_servers, "isolation.level": isolation}
    batches = list(read_ranges(conf, "Partition 0", [KafkaRange(topic, 0, start, end)], include_headers=False,
                               fail_on_data_loss=True, poll_timeout_ms=20_000, cache=cache))
    return pa.Table.from_batches(batches).column("offset").to_pylist() if batches else []


@pytest.fixture
def cache(new_reader_cache):
    c = new_reader_cache(2)
    yield c
    c.close_all()


@pytest.mark.parametrize(("start", "end", "uncommitted", "committed"), [
    (0, 10, sorted(COMMITTED + ABORTED), COMMITTED),  # ends on a marker
    (0, 4, [0, 1, 2], [0, 1, 2]),                       # ends on the first marker
    (3, 4, [], []),                                     # only a marker
    (3, 7, ABORTED, []),                                # marker, aborted records, marker
    (4, 8, [4, 5, 7], [7]),                             # starts on an aborted record (not data loss)
])
def test_markers_are_never_rows_and_aborted_records_follow_the_isolation_level(
        kafka_broker, txn_topic, cache, start, end, uncommitted, committed):
    assert read_offsets(kafka_broker, txn_topic, start, end, cache, "read_uncommitted") == uncommitted
    assert read_offsets(kafka_broker, txn_topic, start, end, cache, "read_committed") == committed
