"""confluent-kafka helpers shared by the integration tests, the demo and the benchmarks.

They talk to any Kafka cluster (the development broker or a real one) exactly as an application would.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from confluent_kafka import KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic, OffsetSpec

from .waits import deadline_after

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


def create_topic(bootstrap: str, name: str, partitions: int = 1, config: dict[str, str] | None = None) -> str:
    """Create ``name`` and return once the leader of every partition serves it.

    Kafka answers CreateTopics once its controller has the topic, a moment before the broker's metadata shows it
    (a Metadata request may leave it out), and its metadata names a partition's leader a moment before that
    leader serves it (ListOffsets and Produce answer NOT_LEADER_OR_FOLLOWER meanwhile); a test sets its topic up
    and then starts, as Kafka's own test utilities wait for the metadata. A Produce refused so is retried by
    librdkafka behind the partition's later requests, already in flight: the records would land out of produce
    order, and tests name records by their offsets. Partitions added while a query runs are not waited for here:
    meeting them before their leaders is the query's business."""
    client = admin(bootstrap)  # keep a reference: a collected AdminClient fails its pending futures
    futures = client.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})],
        operation_timeout=TIMEOUT_S,
    )
    futures[name].result(TIMEOUT_S)
    _wait_for_leaders(client, name, partitions)
    _wait_for_served(client, name, partitions)
    return name


def create_topics(bootstrap: str, names: Sequence[str], partitions: int, *, per_request: int = 20) -> list[str]:
    """Create every topic of ``names`` with ``partitions`` each, and return once every partition's leader serves it
    (as :func:`create_topic`).

    ``per_request`` topics a CreateTopics request: KRaft's controller refuses an operation of more than 10,000
    metadata records (``MAX_RECORDS_PER_USER_OP``), a record per partition and one per topic, so a few thousand
    partitions go in each request and a job of 10,000 is made in several."""
    client = admin(bootstrap)
    for start in range(0, len(names), per_request):
        chunk = names[start:start + per_request]
        futures = client.create_topics(
            [NewTopic(name, num_partitions=partitions, replication_factor=1) for name in chunk],
            operation_timeout=TIMEOUT_S)
        for name in chunk:
            futures[name].result(TIMEOUT_S)
    for name in names:
        _wait_for_leaders(client, name, partitions)
        _wait_for_served(client, name, partitions)
    return list(names)


def _wait_for_leaders(client, name: str, partitions: int) -> None:
    deadline = deadline_after(TIMEOUT_S)
    while True:
        topic = client.list_topics(name, timeout=TIMEOUT_S).topics.get(name)
        if topic is not None and topic.error is None and len(topic.partitions) == partitions \
                and all(p.leader >= 0 and p.error is None for p in topic.partitions.values()):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {name} has no leader for every partition {TIMEOUT_S} s after its creation")
        time.sleep(0.05)


def _wait_for_served(client, name: str, partitions: int) -> None:
    """Until ListOffsets answers for every partition (its leader check is Produce's)."""
    deadline = deadline_after(TIMEOUT_S)
    pending = [TopicPartition(name, p) for p in range(partitions)]
    while True:
        futures = client.list_offsets({tp: OffsetSpec.latest() for tp in pending}, request_timeout=TIMEOUT_S)
        refused = []
        for tp, future in futures.items():
            try:
                future.result(TIMEOUT_S)
            except KafkaException as err:
                refused.append((tp, err))
        if not refused:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {name}: partitions {[tp.partition for tp, _ in refused]} still not served "
                               f"{TIMEOUT_S} s after their creation: {refused[0][1]}")
        pending = [tp for tp, _ in refused]
        time.sleep(0.05)


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
    metadata_first: bool = False,
) -> list[Produced]:
    """Produce ``(key, value[, headers[, partition[, timestamp_ms]]])`` tuples and wait for every ack.

    Without an explicit partition librdkafka's default partitioner picks one (murmur2-compatible hash of the key
    modulo the partition count, as SEP-5 requires). Returns what the broker acknowledged, in produce order.
    ``metadata_first``: learn the topic's partitions before producing, so every record goes straight to its
    partition's queue; otherwise records wait in a queue of their own until the metadata comes, and are moved one by
    one, so a flush under way can send the first of them before the rest have arrived (one batch becomes two).
    """
    # Idempotent, as Kafka's own producer is by default: a request the broker refused (NOT_LEADER_OR_FOLLOWER while
    # a new partition's leader takes over, a timeout under load) is sent again in its place, so the log holds the
    # records in the order they were produced, which the tests' offsets and per-key order checks rely on. Without
    # it librdkafka resends a refused request after the ones behind it, and Apache Kafka did refuse some.
    conf = {"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all", "enable.idempotence": True,
            "partitioner": "murmur2_random", "message.max.bytes": 8 * 1024 * 1024}
    conf.update(extra_conf or {})
    producer = Producer(conf)
    if metadata_first:
        producer.list_topics(topic, timeout=TIMEOUT_S)
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


def transactional_producer(bootstrap: str, transactional_id: str | None = None, **conf) -> Producer:
    """A confluent-kafka transactional producer, ``init_transactions`` done (fencing any earlier producer
    of the same ``transactional_id``, a fresh one unless given), keys partitioned as Kafka's Java producer does
    (as ``produce``). ``conf`` adds producer settings, dots as underscores: ``transaction_timeout_ms=2000``."""
    settings = {"bootstrap.servers": bootstrap, "linger.ms": 5, "partitioner": "murmur2_random",
                "transactional.id": transactional_id or unique_topic("txn")}
    settings.update({k.replace("_", "."): v for k, v in conf.items()})
    producer = Producer(settings)
    producer.init_transactions(TIMEOUT_S)
    return producer


def produce_in_transaction(producer: Producer, topic: str, records: Iterable[tuple], *,
                           end: str = "commit") -> list[int]:
    """One transaction of ``(key, value[, partition])`` records: begun, produced, flushed (so every record is
    in the log, even one to be aborted), then ended by ``end``: "commit", "abort", or "open" (left open for
    the caller to end, or to abandon). Returns the offsets the broker gave the records, in produce order."""
    if end not in ("commit", "abort", "open"):
        raise ValueError(f"end must be commit, abort or open, got {end!r}")
    producer.begin_transaction()
    offsets: dict[int, int] = {}
    errors: list[str] = []

    def on_delivery(index: int):
        def callback(err, msg):
            if err is not None:
                errors.append(str(err))
            else:
                offsets[index] = msg.offset()
        return callback

    count = 0
    for index, (key, value, *rest) in enumerate(records):
        kwargs = {"partition": rest[0]} if rest and rest[0] is not None else {}
        producer.produce(topic, key=key, value=value, on_delivery=on_delivery(index), **kwargs)
        count += 1
    remaining = producer.flush(TIMEOUT_S)
    if remaining or errors:
        raise RuntimeError(f"transactional produce to {topic} failed: {remaining} unacknowledged, {errors[:5]}")
    if end == "commit":
        producer.commit_transaction(TIMEOUT_S)
    elif end == "abort":
        producer.abort_transaction(TIMEOUT_S)
    return [offsets[i] for i in range(count)]


def stable_offsets(bootstrap: str, topic: str, partitions: int) -> list[tuple[int, int]]:
    """(high watermark, last stable offset) of each partition: ListOffsets latest at both isolation levels."""
    from confluent_kafka import Consumer

    result = []
    for isolation in ("read_uncommitted", "read_committed"):
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "stable-offsets-probe",
                             "isolation.level": isolation, "enable.auto.commit": False})
        try:
            result.append([consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=TIMEOUT_S,
                                                          cached=False)[1] for p in range(partitions)])
        finally:
            consumer.close()
    return list(zip(result[0], result[1], strict=True))
