"""SEP-5 on a live query: partition expansion keeps the task set, and drain-first keeps per-key order.

Backs docs/guarantees.md: "Partition expansion keeps every task and per-key order" (growth by any count the
grouper accepts, while the query is behind) and "Producers with stale metadata" (expansion.settleTime).
"""

import json
from pathlib import Path

import pytest
from confluent_kafka import Producer

from samza_devkit.kafka_helpers import add_partitions, create_topic, produce, unique_topic
from spark_samza_source.core.jobmodel import JobModel
from spark_samza_source.metadata import open_store

pytestmark = [pytest.mark.spark, pytest.mark.slow]

KEYS = [f"user-{i}".encode() for i in range(40)]


def keyed_round(seq_start: int, per_key: int):
    return [(k, f"{k.decode()}:{seq_start + n}".encode()) for n in range(per_key) for k in KEYS]


def seen_partitions(kq, topic: str) -> int:
    """The partition count of ``topic`` in the job model the running query last planned with (its store)."""
    value = open_store(kq.store_uri, kq.job).get("jobmodel", "current")
    if value is None:
        return 0
    return sum(1 for s in JobModel.from_json(value).ssp_to_task() if s.stream == topic)


def offset_log(kq, name: str) -> list[dict]:
    """The source offsets of every batch in ``name``'s checkpoint, in batch order."""
    out = []
    folder = Path(kq.checkpoint(name)) / "offsets"
    for path in sorted(folder.iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else -1):
        if path.name.isdigit():
            out.append(json.loads(path.read_text().splitlines()[-1]))
    return out


def assert_per_key_order(kq, name: str, rounds: int) -> dict[bytes, set[int]]:
    """Every key's sequence numbers in read order (batch, then offset) are 0..rounds-1; returns key -> partitions."""
    per_key: dict[bytes, list[tuple[int, int, int, int]]] = {}
    for batch_id, batch_rows in kq.batches[name]:
        for r in batch_rows:
            seq = int(r.value.decode().rsplit(":", 1)[1])
            per_key.setdefault(r.key, []).append((batch_id, r.partition, r.offset, seq))
    for key, items in per_key.items():
        by_batch: dict[int, set[int]] = {}
        for batch_id, partition, _, _ in items:
            by_batch.setdefault(batch_id, set()).add(partition)
        assert all(len(p) == 1 for p in by_batch.values()), f"{key!r} read from two partitions in one batch"
        ordered = [seq for _, _, _, seq in sorted(items, key=lambda t: (t[0], t[2]))]
        assert ordered == list(range(rounds)), f"{key!r} out of produce order: {ordered}"
    return {key: {partition for _, partition, _, _ in items} for key, items in per_key.items()}


def test_expansion_2_4_8_keeps_two_tasks_and_per_key_order(kq):
    """Backs docs/guarantees.md: "Task identity survives Kafka partition expansion ... as well as 2 -> 4 -> 8"."""
    topic = create_topic(kq.bootstrap, unique_topic("grow"), 2)
    acks = produce(kq.bootstrap, topic, keyed_round(0, 30))
    query = kq.start_collecting("grow", subscribe=topic, maxOffsetsPerTrigger="500")
    kq.wait_for(lambda: len(kq.collected("grow")) >= 200, what="first batches")

    add_partitions(kq.bootstrap, topic, 4)
    acks += produce(kq.bootstrap, topic, keyed_round(30, 30))
    kq.wait_for(lambda: len(kq.collected("grow")) >= 2000, what="reads after 2 -> 4")

    add_partitions(kq.bootstrap, topic, 8)
    acks += produce(kq.bootstrap, topic, keyed_round(60, 30))
    kq.wait_for(lambda: len(kq.collected("grow")) >= len(acks), timeout=240, what="every record")
    query.processAllAvailable()
    query.stop()

    rows = kq.collected("grow")
    # Nothing lost or duplicated.
    assert sorted((r.partition, r.offset) for r in rows) == sorted((a.partition, a.offset) for a in acks)
    # Exactly two tasks, partitions grouped by p % 2 (SEP-5's fixed tasks).
    tasks = {}
    for r in rows:
        tasks.setdefault(r.task, set()).add(r.partition)
    assert tasks == {"Partition 0": {0, 2, 4, 6}, "Partition 1": {1, 3, 5, 7}}
    # Keys really moved to new partitions (otherwise the order check below proves nothing).
    assert {a.partition for a in acks} == set(range(8))

    # Per key: the batch sequence never goes backwards, within a batch a key comes from one partition.
    assert_per_key_order(kq, "grow", 90)


# ---- growth while the query is far behind ------------------------------------------------------------------------

@pytest.mark.parametrize("chain", [(2, 4, 6), (2, 4, 8)], ids=["2-4-6", "2-4-8"])
def test_growth_while_far_behind_keeps_the_initial_tasks_exactly_once_in_per_key_order(kq, chain):
    """4 -> 6 is a multiple of the initial count (2) but not of the previous one (4): keys also move between
    partitions that existed before (hash 6: partition 2 of 4 -> partition 0 of 6), which the barriers must hold.

    Backs docs/guarantees.md: "Task identity survives Kafka partition expansion by any count the grouper accepts (2
    -> 4 -> 6 ...), while the query is far behind, exactly once".
    """
    per_round = 20
    topic = create_topic(kq.bootstrap, unique_topic("behind"), chain[0])
    acks = produce(kq.bootstrap, topic, keyed_round(0, per_round))
    name = f"behind{chain[-1]}"
    query = kq.start_collecting(name, subscribe=topic, maxOffsetsPerTrigger="120")
    kq.wait_for(lambda: kq.collected(name), what="the first batch")
    for step, count in enumerate(chain[1:], start=1):
        add_partitions(kq.bootstrap, topic, count)
        kq.wait_for(lambda c=count: seen_partitions(kq, topic) == c, what=f"the query to see {count} partitions")
        assert len(kq.collected(name)) < len(acks), "the query caught up before the growth: nothing to hold back"
        acks += produce(kq.bootstrap, topic, keyed_round(step * per_round, per_round))
    kq.wait_for(lambda: len(kq.collected(name)) >= len(acks), timeout=240, what="every record")
    query.processAllAvailable()
    query.stop()

    rows = kq.collected(name)
    assert sorted((r.partition, r.offset) for r in rows) == sorted((a.partition, a.offset) for a in acks)
    tasks: dict[str, set[int]] = {}
    for r in rows:
        tasks.setdefault(r.task, set()).add(r.partition)
    final = chain[-1]
    assert tasks == {"Partition 0": set(range(0, final, 2)), "Partition 1": set(range(1, final, 2))}
    partitions_of = assert_per_key_order(kq, name, per_round * len(chain))
    # The barriers held something back while the query was behind, and keys really moved.
    assert any(o["barriers"] for o in offset_log(kq, name)), "no barrier was ever in force"
    assert any(len(ps) > 1 for ps in partitions_of.values())
    if final == 6:
        # keys that moved from one old partition to another (not only to new ones)
        assert any(len(ps & {0, 1, 2, 3}) > 1 for ps in partitions_of.values())


def test_a_producer_with_stale_metadata_is_drained_first_within_the_settle_time(kq):
    """A producer that has not refreshed its metadata keeps writing keys to their old partitions after the growth
    (librdkafka's topic.metadata.refresh.interval.ms, Java's metadata.max.age.ms: 5 min by default). Its records
    were produced before the fresh producer's, so they must be read first: the cut waits expansion.settleTime.

    Backs docs/guarantees.md: "growth by a multiple of the current count (4 -> 8) ... a producer with stale metadata
    ... is drained first".
    """
    per_round = 10
    topic = create_topic(kq.bootstrap, unique_topic("stale"), 2)
    stale = Producer({"bootstrap.servers": kq.bootstrap, "partitioner": "murmur2_random", "linger.ms": 5,
                      "topic.metadata.refresh.interval.ms": 600_000, "enable.idempotence": False})
    delivered: list = []

    def send(round_no: int) -> None:
        for seq in range(round_no * per_round, (round_no + 1) * per_round):
            for key in KEYS:
                stale.produce(topic, key=key, value=f"{key.decode()}:{seq}".encode(),
                              on_delivery=lambda err, msg: delivered.append((err, msg.partition(), msg.offset())))
        assert stale.flush(60) == 0

    send(0)
    name = "stale"
    query = kq.start_collecting(name, subscribe=topic, maxOffsetsPerTrigger="60",
                                **{"expansion.settleTime": "25s"})
    kq.wait_for(lambda: kq.collected(name), what="the first batch")
    add_partitions(kq.bootstrap, topic, 4)
    kq.wait_for(lambda: seen_partitions(kq, topic) == 4, what="the query to see 4 partitions")
    send(1)  # after the growth, still to the old partitions
    send(2)
    assert all(err is None for err, _, _ in delivered)
    assert {p for _, p, _ in delivered} == {0, 1}, "the stale producer saw the new partitions"
    fresh = produce(kq.bootstrap, topic, keyed_round(3 * per_round, per_round))
    assert {a.partition for a in fresh} == {0, 1, 2, 3}
    total = len(delivered) + len(fresh)
    kq.wait_for(lambda: len(kq.collected(name)) >= total, timeout=240, what="every record")
    query.processAllAvailable()
    query.stop()
    stale.flush(10)
    stale = None  # noqa: F841 - closes the client now, not after the session's broker is gone

    rows = kq.collected(name)
    expected = sorted([(p, o) for _, p, o in delivered] + [(a.partition, a.offset) for a in fresh])
    assert sorted((r.partition, r.offset) for r in rows) == expected
    assert_per_key_order(kq, name, 4 * per_round)
    settling = [o for o in offset_log(kq, name) if any(b.get("settleUntil") for bs in o["barriers"].values()
                                                      for b in bs)]
    assert settling, "the growth was never settling"
