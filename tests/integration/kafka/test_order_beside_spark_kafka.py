"""samza-kafka beside Spark's own Kafka source (``format("kafka")``) on the same Apache Kafka broker and topic: the
per-key order only samza-kafka keeps when a topic grows while the query is behind, and a rewind that keeps a
stateful query's state.

Backs README "Which source when": "the order users cannot get from Spark's source".
"""

import threading

import pytest

from samza_devkit.kafka_helpers import add_partitions, create_topic, produce, unique_topic
from samza_devkit.key_order import ahead_of_key_order, keyed_rounds
from samza_devkit.query_harness import await_available_now
from spark_samza_source.core.model import SystemStreamPartition
from spark_samza_source.core.startpoint import StartpointOldest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

KEYS = [f"user-{i}".encode() for i in range(40)]
PER_KEY = 10  # per round: 400 records
PER_TRIGGER = "150"  # both queries: most of the first round left after their first batch
TRIGGER = {"processingTime": "200 milliseconds"}
COLUMNS = ["key", "value", "partition", "offset"]


def spark_kafka_stream(kq, topic: str):
    """Spark's own Kafka source on the harness's broker, as a user starts it: earliest, the same rate limit."""
    return (kq.spark.readStream.format("kafka").option("kafka.bootstrap.servers", kq.bootstrap)
            .option("subscribe", topic).option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", PER_TRIGGER).load())


def test_growth_while_behind_reorders_keys_in_spark_kafka_and_not_in_samza_kafka(kq):
    """One keyed producer (murmur2, as Kafka's Java producer partitions keys) writes a round to 4 partitions; both
    queries start from the earliest offsets with the same trigger and ``maxOffsetsPerTrigger`` and read one batch
    (held in its ``foreachBatch`` meanwhile); while both are behind, the topic grows to 8 and the producer writes a
    second round of the same keys, about half of which now hash to the new partitions 4-7.

    Spark's source reads a partition it discovers from its earliest offset and shares ``maxOffsetsPerTrigger``
    among all partitions by their backlog, so a moved key's second-round records come in batches before its
    first-round ones still waiting in the old partition. samza-kafka holds a new partition back until the old
    ones are read up to where they stood at the growth (docs/guarantees.md), so none does.
    """
    topic = create_topic(kq.bootstrap, unique_topic("order"), 4)
    acks = produce(kq.bootstrap, topic, keyed_rounds(KEYS, 0, PER_KEY))
    # Each query's first foreachBatch waits for the growth: both are one batch in, however fast either runs.
    grown = threading.Event()
    in_first_batch = {"samza": threading.Event(), "spark": threading.Event()}

    def hold_until_grown(name):
        def on_batch(_batch_id, _rows):
            in_first_batch[name].set()
            assert grown.wait(120), "the test never grew the topic"
        return on_batch

    samza = kq.start_collecting("samza", trigger=TRIGGER, on_batch=hold_until_grown("samza"), subscribe=topic,
                                maxOffsetsPerTrigger=PER_TRIGGER)
    spark = kq.collect_batches("spark", spark_kafka_stream(kq, topic), trigger=TRIGGER,
                               on_batch=hold_until_grown("spark"), columns=COLUMNS)
    kq.wait_for(lambda: all(e.is_set() for e in in_first_batch.values()), what="a first batch of each query")

    try:
        add_partitions(kq.bootstrap, topic, 8)
        # a producer made after the growth (fresh metadata), as one a user restarts or that refreshed its metadata
        acks += produce(kq.bootstrap, topic, keyed_rounds(KEYS, PER_KEY, PER_KEY))
    finally:
        grown.set()
    assert {a.partition for a in acks[PER_KEY * len(KEYS):]} == set(range(8)), "no key moved to a new partition"

    for name in ("samza", "spark"):
        kq.wait_for(lambda n=name: len(kq.collected(n)) >= len(acks), timeout=120, what=f"every record in {name}")
    samza.stop()
    spark.stop()

    expected = sorted((a.partition, a.offset) for a in acks)
    for name in ("samza", "spark"):
        assert sorted((r.partition, r.offset) for r in kq.collected(name)) == expected, f"{name}: lost or repeated"
    spark_ahead = ahead_of_key_order(kq.batches["spark"])
    samza_ahead = ahead_of_key_order(kq.batches["samza"])
    assert sum(spark_ahead.values()) > 0, "Spark's source kept every key's order: the case shows nothing"
    assert samza_ahead == {}, f"samza-kafka delivered records ahead of their key's earlier writes: {samza_ahead}"


# ---- rewinding a stateful query ------------------------------------------------------------------------------------

def run_counts(kq, df, checkpoint: str) -> tuple[dict[bytes, int], int]:
    """``df``'s rows counted per key (a stateful aggregation, complete output) in one AvailableNow run on
    ``checkpoint``: (the counts after the run, or {} if no batch ran; the input rows the run read)."""
    final: dict[bytes, int] = {}

    def keep(batch_df, _batch_id):
        final.clear()
        final.update({bytes(r.key): r["count"] for r in batch_df.collect()})

    query = (df.groupBy("key").count().writeStream.outputMode("complete").foreachBatch(keep)
             .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    await_available_now(query, checkpoint, 180)
    return dict(final), sum(p["numInputRows"] for p in query.recentProgress)


def test_rewind_keeps_the_state_with_a_startpoint_and_loses_it_with_spark_kafkas_new_checkpoint(kq):
    """One stateful query per source (a running count per key) reads 10 records of each key, then is rewound to
    the oldest offsets. samza-kafka: a startpoint per partition, the query restarts on its own checkpoint, the
    aggregation's state is kept and the replay counts on top of it (20). Spark's source: ``startingOffsets``
    applies only to a query without a checkpoint (on its own checkpoint the run reads nothing), so the rewind
    needs a new checkpoint, and the aggregation starts again from nothing (10: the first run's state is lost).

    Backs README "Which source when": rewinding keeps the query's state with samza-kafka only.
    """
    topic = create_topic(kq.bootstrap, unique_topic("rewind"), 2)
    keys = KEYS[:5]
    produce(kq.bootstrap, topic, keyed_rounds(keys, 0, 10))
    first = {key: 10 for key in keys}

    samza_ckpt = kq.checkpoint("samza-agg")
    assert run_counts(kq, kq.stream(subscribe=topic), samza_ckpt)[0] == first
    for partition in (0, 1):
        kq.startpoints().write(SystemStreamPartition("kafka", topic, partition), StartpointOldest())
    counts, read = run_counts(kq, kq.stream(subscribe=topic), samza_ckpt)
    assert read == 50 and counts == {key: 20 for key in keys}, "samza-kafka: the state did not survive the rewind"

    spark_ckpt = kq.checkpoint("spark-agg")
    assert run_counts(kq, spark_kafka_stream(kq, topic), spark_ckpt)[0] == first
    assert run_counts(kq, spark_kafka_stream(kq, topic), spark_ckpt) == ({}, 0), \
        "Spark's source rewound on its own checkpoint"
    counts, read = run_counts(kq, spark_kafka_stream(kq, topic), kq.checkpoint("spark-agg-new"))
    assert read == 50 and counts == first, "Spark's source kept the state across a new checkpoint"
