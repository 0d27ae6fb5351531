"""``minPartitions``: a job created on 2 partitions, its topic grown 2 -> 4 -> 8, read by as many Spark partitions as
the batch has partitions with records (up to the option), without giving up per-key order (issue #44).

One query name, one checkpoint, three runs (each a driver restart from the checkpoint):

1. ``minPartitions=8`` while the topic grows 2 -> 4 under the running query;
2. the option off, on the same checkpoint, while the topic grows 4 -> 8: one Spark partition per task again;
3. the option on again, after a startpoint rewound partition 0 to its oldest offset while the query was stopped.

Every batch's rows carry ``spark_partition_id()``: from them, each Kafka partition of a batch is read by exactly
one Spark partition, in offset order, the Spark partition count is what the option promises, and the ``task``
column stays the Samza task (``Partition p % 2``). Across the runs: exactly once into a sink keyed by
(partition, offset) (the rewound records aside, which a startpoint asks for), per-key order (the devkit's
key-order count is 0), and an offset log whose entries have the same shape with and without the option (Spark's
log holds no input partitions, so turning the option on or off changes nothing a restart reads).
"""

from __future__ import annotations

import json

import pytest
from pyspark.sql.functions import spark_partition_id

from samza_devkit.checkpoint_log import offset_log
from samza_devkit.kafka_helpers import add_partitions, create_topic, produce, unique_topic
from samza_devkit.key_order import ahead_of_key_order, keyed_rounds
from spark_samza_source.core.jobmodel import JobModel
from spark_samza_source.core.model import SystemStreamPartition
from spark_samza_source.core.startpoint import StartpointOldest
from spark_samza_source.metadata import open_store

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(300)]

KEYS = [f"user-{i}".encode() for i in range(64)]  # enough for every one of 8 partitions to get some
PER_KEY = 2  # records of each key per round
NAME = "split"


def seen_partitions(kq, topic: str) -> int:
    """The partition count of ``topic`` in the job model the running query last planned with."""
    value = open_store(kq.store_uri, kq.job).get("jobmodel", "current")
    return 0 if value is None else sum(1 for s in JobModel.from_json(value).ssp_to_task() if s.stream == topic)


class Rounds:
    """Keyed rounds through an idempotent producer (``kafka_helpers.produce``): ``key:seq``, seq counting on."""

    def __init__(self, kq, topic: str) -> None:
        self.kq, self.topic, self.produced = kq, topic, []

    def send(self) -> int:
        first_seq = len(self.produced) // len(KEYS)
        acks = produce(self.kq.bootstrap, self.topic, keyed_rounds(KEYS, first_seq, PER_KEY), metadata_first=True)
        self.produced.extend(acks)
        return len(self.produced)


def start(kq, topic: str, **extra):
    df = kq.stream(subscribe=topic, **extra).withColumn("sparkPartition", spark_partition_id())
    return kq.collect_batches(NAME, df)


def run_until(kq, query, total: int, what: str) -> None:
    kq.wait_for(lambda: len({(r.partition, r.offset) for r in kq.collected(NAME)}) >= total, what=what)
    query.processAllAvailable()


def batches_of(kq, batch_ids) -> list[tuple[int, list]]:
    return [(b, rows) for b, rows in kq.batches[NAME] if b in batch_ids]


def check_each_partition_read_by_one_spark_task_in_order(batches) -> None:
    for batch_id, rows in batches:
        spark_of: dict[int, set[int]] = {}
        offsets: dict[int, list[int]] = {}
        for r in rows:
            spark_of.setdefault(r.partition, set()).add(r.sparkPartition)
            offsets.setdefault(r.partition, []).append(r.offset)
            assert r.task == f"Partition {r.partition % 2}", f"batch {batch_id}: {r.task} read partition {r.partition}"
        assert all(len(s) == 1 for s in spark_of.values()), f"batch {batch_id}: a partition split: {spark_of}"
        assert all(o == sorted(o) for o in offsets.values()), f"batch {batch_id}: a partition out of offset order"


def spark_partitions(rows) -> int:
    return len({r.sparkPartition for r in rows})


def kafka_partitions(rows) -> int:
    return len({r.partition for r in rows})


def test_the_spark_partitions_follow_the_topic_through_growth_restarts_and_a_startpoint(kq):
    """Backs docs/guarantees.md, "Guarantees": minPartitions keeps per-key order, exactly once and the tasks, and
    can be turned on and off on one checkpoint."""
    topic = create_topic(kq.bootstrap, unique_topic("split"), 2)
    rounds = Rounds(kq, topic)
    total = rounds.send()

    # 1. minPartitions=8, the topic grown 2 -> 4 under the running query
    query = start(kq, topic, minPartitions=8)
    run_until(kq, query, total, "round 0")
    add_partitions(kq.bootstrap, topic, 4)
    kq.wait_for(lambda: seen_partitions(kq, topic) == 4, what="the query to see 4 partitions")
    total = rounds.send()
    run_until(kq, query, total, "round 1 over 4 partitions")
    query.stop()
    first_run = {b for b, _ in kq.batches[NAME]}

    # 2. the option off on the same checkpoint: one Spark partition per task; the topic grown 4 -> 8
    total = rounds.send()  # over 4 partitions, read by the restarted query's first batch
    query = start(kq, topic)
    run_until(kq, query, total, "round 2 after the restart without minPartitions")
    add_partitions(kq.bootstrap, topic, 8)
    kq.wait_for(lambda: seen_partitions(kq, topic) == 8, what="the query to see 8 partitions")
    total = rounds.send()
    run_until(kq, query, total, "round 3 over 8 partitions")
    query.stop()
    second_run = {b for b, _ in kq.batches[NAME]} - first_run

    # 3. the option on again, after a startpoint rewound partition 0 (written while the query was stopped)
    total = rounds.send()
    kq.startpoints().write(SystemStreamPartition("kafka", topic, 0), StartpointOldest())
    query = start(kq, topic, minPartitions=8)
    run_until(kq, query, total, "round 4 after the restart with minPartitions")
    query.stop()
    third_run = {b for b, _ in kq.batches[NAME]} - first_run - second_run

    batches = kq.batches[NAME]
    check_each_partition_read_by_one_spark_task_in_order(batches)
    for batch_id, rows in batches_of(kq, first_run | third_run):
        assert spark_partitions(rows) == min(8, kafka_partitions(rows)), f"batch {batch_id}: not split as asked"
    for batch_id, rows in batches_of(kq, second_run):
        assert spark_partitions(rows) == len({r.task for r in rows}), f"batch {batch_id}: split without the option"
    assert max(kafka_partitions(rows) for _, rows in batches_of(kq, first_run)) == 4
    restart_batch = min(third_run)
    assert spark_partitions(dict(batches)[restart_batch]) == 8, "the restart's batch over 8 partitions was not split"

    # exactly once into a sink keyed by (partition, offset); partition 0 read twice from the startpoint on
    rows = [r for _, rs in batches for r in rs]
    deliveries: dict[tuple[int, int], int] = {}
    for r in rows:
        deliveries[(r.partition, r.offset)] = deliveries.get((r.partition, r.offset), 0) + 1
    assert set(deliveries) == {(p.partition, p.offset) for p in rounds.produced}
    before_rewind = rounds.produced[:len(rounds.produced) - len(KEYS) * PER_KEY]
    twice = {(0, p.offset) for p in before_rewind if p.partition == 0}
    assert {k for k, n in deliveries.items() if n == 2} == twice, "the startpoint did not rewind partition 0 alone"
    assert all(n <= 2 for n in deliveries.values())

    # per-key order over the first delivery of each record
    first_seen: set[tuple[int, int]] = set()
    firsts = []
    for batch_id, rs in batches:
        kept = [r for r in rs if (r.partition, r.offset) not in first_seen]
        first_seen.update((r.partition, r.offset) for r in kept)
        firsts.append((batch_id, kept))
    assert ahead_of_key_order(firsts) == {}

    # the offset log: the same shape with and without the option (no input partitions in it)
    shapes = {json.dumps(sorted(offset)) for offset in offset_log(kq.checkpoint(NAME)).values()}
    assert len(shapes) == 1, shapes
