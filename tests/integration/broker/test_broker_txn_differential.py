"""Differential test of transactions: the same transactional produce/commit/abort script against librdkafka's mock
cluster and against the development broker must place the records and the markers at the same offsets.

Where the mock stops implementing Kafka, the development broker is held to the protocol documentation instead
(``test_broker_transactions.py``): the mock reports the high watermark as the last stable offset even while a
transaction is open, lists no aborted transactions in read_committed fetches (so its consumers return aborted
records) and does not time transactions out.  This script therefore ends every transaction and compares what
both implement alike: delivery offsets, high watermarks, and what a read_uncommitted consumer returns (markers
take offsets but are never returned).
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition

from samza_devkit.kafka_broker import KafkaDevBroker
from samza_devkit.kafka_helpers import TIMEOUT_S, create_topic, produce_in_transaction, transactional_producer
from samza_devkit.rdkafka_mock_cluster import RdkafkaMockCluster
from samza_devkit.waits import deadline_after

TOPIC = "txn-differential"
PARTITIONS = 2


def run_script(bootstrap: str) -> dict:
    producer = transactional_producer(bootstrap, "differential-tid")
    delivered = [
        produce_in_transaction(producer, TOPIC, [(None, b"c%d" % i, 0) for i in range(3)] + [(None, b"c-p1", 1)]),
        produce_in_transaction(producer, TOPIC, [(None, b"a%d" % i, 0) for i in range(2)], end="abort"),
        produce_in_transaction(producer, TOPIC, [(None, b"last", 0), (None, b"last-p1", 1)]),
        produce_in_transaction(producer, TOPIC, [(None, b"a-p1", 1)], end="abort"),
    ]
    # read_uncommitted said explicitly: librdkafka's default is read_committed, where the mock returns aborted
    # records (it lists no aborted transactions) and the development broker, as Kafka, does not
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "txn-differential",
                         "isolation.level": "read_uncommitted", "enable.auto.commit": False,
                         "enable.partition.eof": True})
    watermarks = [consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=TIMEOUT_S, cached=False)
                  for p in range(PARTITIONS)]
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    rows, at_end = [], set()
    deadline = deadline_after(TIMEOUT_S)
    while len(at_end) < PARTITIONS and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() != -191:  # _PARTITION_EOF
                raise KafkaException(msg.error())
            at_end.add(msg.partition())
            continue
        rows.append((msg.partition(), msg.offset(), msg.value()))
    positions = [tp.offset for tp in consumer.position([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])]
    consumer.close()
    return {"delivered": delivered, "watermarks": watermarks, "rows": sorted(rows), "positions": positions}


@pytest.fixture(scope="module")
def mock_results():
    with RdkafkaMockCluster() as cluster:
        cluster.create_topic(TOPIC, PARTITIONS)
        return run_script(cluster.bootstrap_servers)


@pytest.fixture(scope="module")
def dev_results():
    with KafkaDevBroker(in_process=True) as broker:
        create_topic(broker.bootstrap_servers, TOPIC, PARTITIONS)
        return run_script(broker.bootstrap_servers)


def test_the_mock_cluster_writes_markers(mock_results):
    # sanity of the reference: a marker after every transaction in each of its partitions
    assert mock_results["delivered"] == [[0, 1, 2, 0], [4, 5], [7, 2], [4]]
    assert mock_results["watermarks"] == [(0, 9), (0, 6)]


@pytest.mark.parametrize("what", ["delivered", "watermarks", "rows", "positions"])
def test_dev_broker_places_records_and_markers_as_the_mock_cluster(mock_results, dev_results, what):
    assert dev_results[what] == mock_results[what]
