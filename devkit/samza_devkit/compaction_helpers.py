"""Compacted topics for tests: produce record batches one by one, and what Kafka's cleaner leaves of them.

``expected_after_compaction`` is the model the development broker's compaction (``kafka_broker/compaction.py``) is
checked against: of every key the record with the highest offset, tombstones included (a first pass keeps them), and
the last batch of the log whole (Kafka's active segment is never cleaned). Kafka's cleaner differs in one way: its
key map leaves the active segment out too, so a record superseded only by one in the last batch survives there
(the development broker's module documentation lists the differences).

On Apache Kafka the cleaner runs on its own schedule: ``CLEANER_NOW`` are the topic settings that make it act within
a second or two, and ``compact`` waits until it has. With ``segment.ms=1`` every record batch whose timestamps are
more than a millisecond past its segment's first batch starts a segment of its own (Kafka rolls a segment by record
timestamps, not by the wall clock, when records carry them), so every batch but the last lies in a closed segment the
cleaner may clean: exactly the model above. The development broker compacts on demand.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

from confluent_kafka import Consumer, KafkaError, TopicPartition

from .kafka_helpers import Produced, create_topic, produce, unique_topic
from .waits import deadline_after

__all__ = ["CLEANER_NOW", "GAPPED_BASE_TS", "GAPPED_BATCHES", "GAPPED_SURVIVORS", "compact", "compacted_partition",
           "consume_partition", "expected_after_compaction", "produce_batches"]

#: a compacted topic whose closed segments Kafka's cleaner (broker settings: ``log.cleaner.backoff.ms=500``) cleans
#: at once: a segment a batch (see the module docstring), any dirty share worth cleaning, no compaction lag
CLEANER_NOW = {"cleanup.policy": "compact", "segment.ms": "1", "min.cleanable.dirty.ratio": "0.01",
               "min.compaction.lag.ms": "0"}

#: a produce() call's records leave as one batch: nothing is sent before the flush that ends the call (librdkafka's
#: flush sends at once whatever linger says), so no pause between two produce() calls (a loaded machine can stall
#: the test process for longer than a short linger) splits them
ONE_BATCH = {"linger.ms": "60000", "batch.num.messages": "10000"}


def produce_batches(bootstrap: str, topic: str, batches: Sequence[Sequence[tuple]], partition: int = 0,
                    extra_conf: dict | None = None) -> list[list[Produced]]:
    """Produce each element of ``batches`` (``(key, value[, timestamp_ms])`` tuples) as one record batch of
    ``partition``, in order; returns the acknowledged records per batch."""
    out = []
    for records in batches:
        rows = [(key, value, None, partition, rest[0] if rest else None) for key, value, *rest in records]
        out.append(produce(bootstrap, topic, rows, extra_conf={**ONE_BATCH, **(extra_conf or {})}, metadata_first=True))
    return out


def expected_after_compaction(batches: Sequence[Sequence[Produced]]) -> list[Produced]:
    """The records one compaction pass keeps, in offset order (see the module docstring)."""
    records = [r for batch in batches for r in batch]
    latest = {r.key: r.offset for r in records}
    active = {r.offset for r in batches[-1]} if batches else set()
    return [r for r in records if r.offset in active or latest[r.key] == r.offset]


def consume_partition(bootstrap: str, topic: str, partition: int, start: int, timeout: float = 30.0,
                      ) -> tuple[list[tuple[int, bytes | None, bytes | None]], int]:
    """Every record from ``start`` to the end of the partition, as (offset, key, value), and the offset at which
    librdkafka reported the end of the partition (its fetch position then: past any trailing gap)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "compaction-probe", "enable.auto.commit": False,
                         "enable.partition.eof": True, "fetch.wait.max.ms": 50})
    try:
        consumer.assign([TopicPartition(topic, partition, start)])
        rows: list = []
        deadline = deadline_after(timeout)
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    return rows, msg.offset()
                raise RuntimeError(f"consuming {topic}[{partition}]: {msg.error()}")
            rows.append((msg.offset(), msg.key(), msg.value()))
        raise TimeoutError(f"no end of {topic}[{partition}] within {timeout} s; read {rows}")
    finally:
        consumer.close()


GAPPED_BASE_TS = 1_700_000_000_000
#: offsets 0..10 (key, value, CreateTime), one list a batch; one pass keeps 4 b, 6 c, 7 e (tombstone), 8 a, 9 d, 10 f:
#: gaps at 0..3 and 5, and the last batch whole. The last batch holds a key of its own: Kafka's cleaner builds its
#: key map without the active segment (the last batch here), so a record superseded only there would survive on
#: Kafka and not on the development broker; with key f alone there, both keep the same records.
GAPPED_BATCHES = [
    [(b"a", b"a0", GAPPED_BASE_TS), (b"b", b"b1", GAPPED_BASE_TS + 10), (b"c", b"c2", GAPPED_BASE_TS + 20)],
    [(b"a", b"a3", GAPPED_BASE_TS + 30), (b"b", b"b4", GAPPED_BASE_TS + 40)],
    [(b"d", b"d5", GAPPED_BASE_TS + 50), (b"c", b"c6", GAPPED_BASE_TS + 60), (b"e", None, GAPPED_BASE_TS + 70)],
    [(b"a", b"a8", GAPPED_BASE_TS + 80), (b"d", b"d9", GAPPED_BASE_TS + 90)],
    [(b"f", b"f10", GAPPED_BASE_TS + 100)],
]
GAPPED_SURVIVORS = [4, 6, 7, 8, 9, 10]


def compact(broker, topic: str, gone: Iterable[int], partition: int = 0, timeout: float = 60.0) -> None:
    """Compaction of ``topic`` (made with ``CLEANER_NOW`` on Kafka): the development broker runs a pass now; on Kafka,
    wait until its cleaner has removed the offsets ``gone`` of ``partition``."""
    if hasattr(broker, "compact"):
        broker.compact(topic)
        return
    gone = set(gone)
    deadline = deadline_after(timeout)
    while True:
        rows, _ = consume_partition(broker.bootstrap_servers, topic, partition, 0)
        left = gone & {offset for offset, _, _ in rows}
        if not left:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"Kafka's log cleaner had not removed offsets {sorted(left)} of {topic}[{partition}] "
                               f"within {timeout:.0f} s (topic settings: CLEANER_NOW)")
        time.sleep(0.3)


def compacted_partition(broker, prefix: str, cleanup_policy: str = "compact") -> str:
    """A new one-partition compacted topic holding ``GAPPED_BATCHES``, compacted once: its survivors are
    ``GAPPED_SURVIVORS``. ``cleanup_policy="compact,delete"`` for a test that deletes records too: Kafka refuses
    DeleteRecords on a compact-only topic (POLICY_VIOLATION)."""
    topic = create_topic(broker.bootstrap_servers, unique_topic(prefix), 1,
                         {**CLEANER_NOW, "cleanup.policy": cleanup_policy})
    produced = produce_batches(broker.bootstrap_servers, topic, GAPPED_BATCHES)
    survivors = [r.offset for r in expected_after_compaction(produced)]
    assert survivors == GAPPED_SURVIVORS
    compact(broker, topic, gone=set(range(11)) - set(survivors))
    return topic
