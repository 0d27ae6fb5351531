"""A transaction left open by a transactional producer, read on both executor read paths: under ``read_committed``
a read ends at the last stable offset (where the planner ends its ranges) while another partition of the same task
is read to its end; under ``read_uncommitted`` the open transaction's records are read. Ranges also end on the
commit and abort markers of the transactions before it.

Partition 0: c0 c1 (0-1) COMMIT (2) a3 (3) ABORT (4) o5 o6 (5-6, open): high watermark 7, last stable offset 5.
Partition 1: d0 (0) COMMIT (1) e2 (2, no transaction): high watermark and last stable offset 3.
Queries held by an open transaction, planned ends and transactions that time out: ``test_source_transactions.py``.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from samza_devkit.kafka_helpers import (
    TIMEOUT_S,
    create_topic,
    produce,
    produce_in_transaction,
    stable_offsets,
    transactional_producer,
    unique_topic,
)
from spark_samza_source.kafka.executor.reader import read_ranges
from spark_samza_source.kafka.input_partition import KafkaRange

NO_STALL_MS = 600_000
COMMITTED_ROWS = [(0, 0, b"c0"), (0, 1, b"c1"), (1, 0, b"d0"), (1, 2, b"e2")]
UNCOMMITTED_ROWS = sorted(COMMITTED_ROWS + [(0, 3, b"a3"), (0, 5, b"o5"), (0, 6, b"o6")])


@pytest.fixture(scope="module")
def open_txn(kafka_broker):
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap, unique_topic("open-txn"), 2)
    closed = transactional_producer(bootstrap)
    assert produce_in_transaction(closed, topic, [(None, b"c0", 0), (None, b"c1", 0), (None, b"d0", 1)]) == [0, 1, 0]
    assert produce_in_transaction(closed, topic, [(None, b"a3", 0)], end="abort") == [3]
    # the broker must not abort it while the module runs (librdkafka's default transaction timeout is a minute)
    holder = transactional_producer(bootstrap, transaction_timeout_ms=NO_STALL_MS)
    assert produce_in_transaction(holder, topic, [(None, b"o5", 0), (None, b"o6", 0)], end="open") == [5, 6]
    assert [a.offset for a in produce(bootstrap, topic, [(None, b"e2", None, 1)])] == [2]
    assert stable_offsets(bootstrap, topic, 2) == [(7, 5), (3, 3)]
    yield topic
    holder.abort_transaction(TIMEOUT_S)


@pytest.fixture
def cache(new_reader_cache):
    c = new_reader_cache(2)
    yield c
    c.close_all()


def read_rows(bootstrap: str, ranges: list[KafkaRange], isolation: str, cache) -> list[tuple]:
    batches = list(read_ranges({"bootstrap.servers": bootstrap, "isolation.level": isolation}, "Partition 0",
                               ranges, include_headers=False, fail_on_data_loss=True, poll_timeout_ms=NO_STALL_MS,
                               cache=cache))
    if not batches:
        return []
    table = pa.Table.from_batches(batches)
    return sorted(zip(*(table.column(c).to_pylist() for c in ("partition", "offset", "value")), strict=True))


@pytest.mark.parametrize(("isolation", "ends", "expected"), [
    ("read_committed", (5, 3), COMMITTED_ROWS),  # partition 0 up to its last stable offset, 1 to its end
    ("read_uncommitted", (7, 3), UNCOMMITTED_ROWS),  # the open transaction's records too
    ("read_committed", (3, 2), [(0, 0, b"c0"), (0, 1, b"c1"), (1, 0, b"d0")]),  # ends on the commit markers
    ("read_committed", (5, 1), [(0, 0, b"c0"), (0, 1, b"c1"), (1, 0, b"d0")]),  # ... on the abort marker
    ("read_uncommitted", (5, 1), [(0, 0, b"c0"), (0, 1, b"c1"), (0, 3, b"a3"), (1, 0, b"d0")]),
])
def test_reads_end_at_markers_and_at_the_last_stable_offset(kafka_broker, open_txn, cache, isolation, ends,
                                                            expected):
    ranges = [KafkaRange(open_txn, 0, 0, ends[0]), KafkaRange(open_txn, 1, 0, ends[1])]
    assert read_rows(kafka_broker.bootstrap_servers, ranges, isolation, cache) == expected
