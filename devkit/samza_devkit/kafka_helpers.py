"""confluent-kafka helpers shared by the integration tests, the demo and the benchmarks.

They talk to any Kafka cluster (the development broker or a real one) exactly as an application would.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

TIMEOUT_S = 30


@dataclass(frozen=True)
class Produced:
    key: bytes | None
    value: bytes | None
    partition: int
    offset: int
    timestamp_ms: int
    headers: tuple[tuple[str, bytes | None], ...] = ()


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def unique_topic(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def create_topic(bootstrap: str, name: str, partitions: int, config: dict[str, str] | None = None) -> str:
    client = admin(bootstrap)  # keep a reference: a collected AdminClient fails its pending futures
    futures = client.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})],
        operation_timeout=TIMEOUT_S,
    )
    futures[name].result(TIMEOUT_S)
    return name


def add_partitions(bootstrap: str, name: str, total: int) -> None:
    client = admin(bootstrap)
    futures = client.create_partitions([NewPartitions(name, total)], operation_timeout=TIMEOUT_S)
    futures[name].result(TIMEOUT_S)


def partition_count(bootstrap: str, name: str) -> int:
    meta = admin(bootstrap).list_topics(name, timeout=TIMEOUT_S)
    return len(meta.topics[name].partitions)


def delete_records_before(bootstrap: str, name: str, partition: int, offset: int) -> None:
    client = admin(bootstrap)
    futures = client.delete_records([TopicPartition(name, partition, offset)], request_timeout=TIMEOUT_S)
    for future in futures.values():
        future.result(TIMEOUT_S)


def produce(
    bootstrap: str,
    topic: str,
    records: Iterable[tuple],
    *,
    extra_conf: dict[str, str] | None = None,
) -> list[Produced]:
    """Produce ``(key, value[, headers[, partition[, timestamp_ms]]])`` tuples and wait for every ack.

    Without an explicit partition librdkafka's default partitioner picks one (murmur2-compatible hash of the key
    modulo the partition count, as SEP-5 requires). Returns what the broker acknowledged, in produce order.
    """
    conf = {"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all", "enable.idempotence": False,
            "partitioner": "murmur2_random", "message.max.bytes": 8 * 1024 * 1024}
    conf.update(extra_conf or {})
    producer = Producer(conf)
    acked: dict[int, Produced] = {}
    errors: list[str] = []

    def on_delivery(index: int, headers):
        def callback(err, msg):
            if err is not None:
                errors.append(str(err))
                return
            ts_type, ts = msg.timestamp()
            # Delivery reports do not carry headers back: keep the ones that were sent.
            acked[index] = Produced(msg.key(), msg.value(), msg.partition(), msg.offset(), ts,
                                    tuple(tuple(h) for h in headers or ()))
        return callback

    count = 0
    for index, record in enumerate(records):
        key, value, *rest = record
        headers: Sequence | None = rest[0] if len(rest) > 0 else None
        kwargs = {}
        if len(rest) > 1 and rest[1] is not None:
            kwargs["partition"] = rest[1]
        if len(rest) > 2 and rest[2] is not None:
            kwargs["timestamp"] = rest[2]
        while True:
            try:
                producer.produce(topic, value=value, key=key, headers=list(headers) if headers else None,
                                 on_delivery=on_delivery(index, headers), **kwargs)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
        count += 1
    remaining = producer.flush(TIMEOUT_S * 4)
    if remaining or errors:
        raise RuntimeError(f"produce to {topic} failed: {remaining} unacknowledged, errors: {errors[:5]}")
    return [acked[i] for i in range(count)]
