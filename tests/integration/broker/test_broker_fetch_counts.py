"""The development broker counts the records its Fetch responses serve, by topic (whole batches, as served)."""

from __future__ import annotations

from confluent_kafka import Consumer, TopicPartition

from samza_devkit.kafka_broker import KafkaDevBroker
from samza_devkit.kafka_helpers import create_topic, produce


def consume(bootstrap: str, topic: str, start: int, count: int) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "count-check", "enable.auto.commit": False,
                         "fetch.max.bytes": 1000, "message.max.bytes": 1000, "max.partition.fetch.bytes": 1000})
    consumer.assign([TopicPartition(topic, 0, start)])
    offsets: list[int] = []
    try:
        while len(offsets) < count:
            msg = consumer.poll(10)
            assert msg is not None and msg.error() is None
            offsets.append(msg.offset())
    finally:
        consumer.close()
    return offsets


def test_fetched_records_counts_what_fetch_served(tmp_path):
    with KafkaDevBroker(data_dir=tmp_path / "d", in_process=True) as broker:
        bootstrap = broker.bootstrap_servers
        topic = create_topic(bootstrap, "counted", 1)
        other = create_topic(bootstrap, "uncounted", 1)
        produce(bootstrap, topic, [(None, b"x" * 100, None, 0) for _ in range(50)],
                extra_conf={"linger.ms": "0", "batch.num.messages": "1"})  # one record per batch
        produce(bootstrap, other, [(None, b"y", None, 0) for _ in range(5)])
        assert broker.fetched_records == {}
        assert consume(bootstrap, topic, 45, 5) == [45, 46, 47, 48, 49]
        served = broker.fetched_records
        assert set(served) == {topic} and 5 <= served[topic] < 45  # from offset 45 on, never the whole topic
        consume(bootstrap, topic, 0, 50)
        assert broker.fetched_records[topic] >= served[topic] + 50
