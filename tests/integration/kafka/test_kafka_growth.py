"""A topic grown twice (2 -> 4 -> 8, 3 -> 6 -> 12) under a query reading it behind, by producers on fresh and on
stale metadata, the way a fleet of producers meets a growth: each keeps its partition count until its metadata
refresh (librdkafka's ``topic.metadata.refresh.interval.ms``, set to ten minutes here), then switches.

Every key is written in five rounds, one after the other:

- round 0: producer A, which knows N partitions (``hash % N``), before the query starts;
- round 1: A, stale, still ``hash % N``, after the query saw N -> 2N;
- round 2: producer B, made after the first growth (``hash % 2N``);
- round 3: B, stale, still ``hash % 2N``, after the query saw 2N -> 4N;
- round 4: a fresh producer (``hash % 4N``).

Each stale round is written within ``expansion.settleTime`` of the growth it missed, which is what the guarantee
asks of producers. Backs docs/guarantees.md: per-key order across growth by a multiple of the current count for
producers that switch within the settle time, and every key in the task of its partition under the initial count
(``p % N``: Samza's grouping with SEP-5 expansion).
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer

from samza_devkit.checkpoint_log import offset_log
from samza_devkit.kafka_helpers import TIMEOUT_S, add_partitions, create_topic, produce, unique_topic
from spark_samza_source.core.jobmodel import JobModel
from spark_samza_source.metadata import open_store

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(300)]

KEYS = [f"user-{i}".encode() for i in range(40)]
PER_KEY = 2  # records of each key in a round
ROUNDS = 5
SETTLE = "15s"  # each stale round is written a second or two after its growth was seen


def round_records(round_no: int) -> list[tuple[bytes, bytes]]:
    return [(k, b"%s:%d" % (k, round_no * PER_KEY + n)) for n in range(PER_KEY) for k in KEYS]


def metadata_keeping_producer(bootstrap: str) -> Producer:
    """A producer that keeps the partition count it first learns for ten minutes (keys as Kafka's Java client)."""
    return Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random", "linger.ms": 5,
                     "enable.idempotence": False, "topic.metadata.refresh.interval.ms": 600_000})


def send(producer: Producer, topic: str, round_no: int) -> list[tuple[bytes, int, int]]:
    """One round through ``producer``: (key, partition, offset) of every record, acknowledged."""
    acks: list = []
    for key, value in round_records(round_no):
        producer.produce(topic, key=key, value=value,
                         on_delivery=lambda err, msg: acks.append((err, msg.key(), msg.partition(), msg.offset())))
    assert producer.flush(TIMEOUT_S) == 0
    assert all(err is None for err, *_ in acks), acks[:3]
    return [(key, p, o) for _, key, p, o in acks]


def seen_partitions(kq, topic: str) -> int:
    """The partition count of ``topic`` in the job model the running query last planned with."""
    value = open_store(kq.store_uri, kq.job).get("jobmodel", "current")
    return 0 if value is None else sum(1 for s in JobModel.from_json(value).ssp_to_task() if s.stream == topic)


def grow(kq, topic: str, count: int) -> None:
    add_partitions(kq.bootstrap, topic, count)
    kq.wait_for(lambda: seen_partitions(kq, topic) == count, what=f"the query to see {count} partitions")


def settle_ends(kq, name: str, grown_to: int) -> set[int]:
    """When (epoch ms) the query was to cut the growth to ``grown_to``, from its checkpoint's offsets."""
    return {barrier["settleUntil"] for offset in offset_log(kq.checkpoint(name)).values()
            for chain in offset["barriers"].values() for barrier in chain
            if barrier["grownTo"] == grown_to and barrier["settleUntil"] is not None}


@pytest.mark.parametrize("initial", [2, 3], ids=["2-4-8", "3-6-12"])
def test_growth_twice_with_stale_and_fresh_producers_keeps_keys_in_their_tasks_and_in_order(kq, initial):
    n = initial
    topic = create_topic(kq.bootstrap, unique_topic("grow"), n)
    name = f"grow{n}"
    a = metadata_keeping_producer(kq.bootstrap)
    rounds = [send(a, topic, 0)]
    query = kq.start_collecting(name, subscribe=topic, maxOffsetsPerTrigger="40",
                                **{"expansion.settleTime": SETTLE})
    kq.wait_for(lambda: kq.collected(name), what="the first batch")

    stale_acked_ms = {}
    grow(kq, topic, 2 * n)
    rounds.append(send(a, topic, 1))
    stale_acked_ms[2 * n] = time.time() * 1000
    b = metadata_keeping_producer(kq.bootstrap)
    rounds.append(send(b, topic, 2))
    grow(kq, topic, 4 * n)
    rounds.append(send(b, topic, 3))
    stale_acked_ms[4 * n] = time.time() * 1000
    fresh = produce(kq.bootstrap, topic, round_records(4))
    rounds.append([(r.key, r.partition, r.offset) for r in fresh])
    for producer in (a, b):
        producer.flush(TIMEOUT_S)
    a = b = None  # noqa: F841 - close the clients now, not after the session's broker is gone
    produced = [ack for acks in rounds for ack in acks]
    kq.wait_for(lambda: len(kq.collected(name)) >= len(produced), timeout=240, what="every record")
    query.processAllAvailable()
    query.stop()

    # each producer wrote under the count it knew: the stale rounds to the old partitions, the others spread
    partitions = [{p for _, p, _ in acks} for acks in rounds]
    assert partitions[0] | partitions[1] <= set(range(n)) and partitions[3] <= set(range(2 * n))
    assert partitions[2] - set(range(n)) and partitions[4] - set(range(2 * n)), partitions
    # ... and each stale round was in the log before the growth it missed was cut (within the settle time)
    for grown_to, acked_ms in stale_acked_ms.items():
        ends = settle_ends(kq, name, grown_to)
        assert len(ends) == 1 and acked_ms < min(ends), \
            f"growth to {grown_to}: stale round acked at {acked_ms:.0f}, cut at {ends} (a slow machine?)"

    rows = kq.collected(name)
    assert sorted((r.partition, r.offset) for r in rows) == sorted((p, o) for _, p, o in produced)  # exactly once
    initial_partition = {key: p for key, p, _ in rounds[0]}
    tasks_of: dict[bytes, set[str]] = {}
    for r in rows:
        tasks_of.setdefault(r.key, set()).add(r.task)
        assert r.task == f"Partition {r.partition % n}", (r.task, r.partition)
    assert tasks_of == {key: {f"Partition {initial_partition[key]}"} for key in KEYS}  # keys in their tasks

    reads: dict[bytes, list[tuple[int, int, int, int]]] = {}
    for batch_id, batch_rows in kq.batches[name]:
        for r in batch_rows:
            reads.setdefault(r.key, []).append((batch_id, r.partition, r.offset, int(r.value.rsplit(b":", 1)[1])))
    for key, items in reads.items():
        by_batch: dict[int, set[int]] = {}
        for batch_id, partition, _, _ in items:
            by_batch.setdefault(batch_id, set()).add(partition)
        assert all(len(ps) == 1 for ps in by_batch.values()), f"{key!r} read from two partitions in one batch"
        in_read_order = [seq for *_, seq in sorted(items, key=lambda t: (t[0], t[2]))]
        assert in_read_order == list(range(ROUNDS * PER_KEY)), f"{key!r} out of produce order: {in_read_order}"
    assert any(len({p for _, p, _, _ in items}) >= 3 for items in reads.values()), "no key moved twice"
