"""samza-kafka beside Spark's own Kafka source (``format("kafka")``) on the same Apache Kafka broker and topic: the
per-key order only samza-kafka keeps when a topic grows while the query is behind.

Backs README "Which source when": "the order users cannot get from Spark's source".
"""

import pytest

from samza_devkit.kafka_helpers import add_partitions, create_topic, produce, unique_topic
from samza_devkit.key_order import ahead_of_key_order, keyed_rounds

pytestmark = [pytest.mark.spark, pytest.mark.slow]

KEYS = [f"user-{i}".encode() for i in range(40)]
PER_KEY = 25  # per round: 1,000 records
PER_TRIGGER = "100"  # both queries: ten batches behind the first round after their first batch
TRIGGER = {"processingTime": "200 milliseconds"}
COLUMNS = ["key", "value", "partition", "offset"]


def spark_kafka_stream(kq, topic: str):
    """Spark's own Kafka source on the harness's broker, as a user starts it: earliest, the same rate limit."""
    return (kq.spark.readStream.format("kafka").option("kafka.bootstrap.servers", kq.bootstrap)
            .option("subscribe", topic).option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", PER_TRIGGER).load())


def test_growth_while_behind_reorders_keys_in_spark_kafka_and_not_in_samza_kafka(kq):
    """One keyed producer (murmur2, as Kafka's Java producer partitions keys) writes a round to 4 partitions; both
    queries start from the earliest offsets with the same trigger and ``maxOffsetsPerTrigger`` and read one batch;
    while both are still behind, the topic grows to 8 and the producer writes a second round of the same keys,
    about half of which now hash to the new partitions 4-7.

    Spark's source reads a partition it discovers from its earliest offset and shares ``maxOffsetsPerTrigger``
    among all partitions by their backlog, so a moved key's second-round records come in batches before its
    first-round ones still waiting in the old partition. samza-kafka holds a new partition back until the old
    ones are read up to where they stood at the growth (docs/guarantees.md), so none does.
    """
    topic = create_topic(kq.bootstrap, unique_topic("order"), 4)
    acks = produce(kq.bootstrap, topic, keyed_rounds(KEYS, 0, PER_KEY))
    samza = kq.start_collecting("samza", trigger=TRIGGER, subscribe=topic, maxOffsetsPerTrigger=PER_TRIGGER)
    spark = kq.collect_batches("spark", spark_kafka_stream(kq, topic), trigger=TRIGGER, columns=COLUMNS)
    kq.wait_for(lambda: kq.collected("samza") and kq.collected("spark"), what="a first batch of each query")

    add_partitions(kq.bootstrap, topic, 8)
    behind = {name: len(kq.collected(name)) for name in ("samza", "spark")}
    assert all(n < len(acks) - int(PER_TRIGGER) for n in behind.values()), \
        f"a query caught up with the first round before the growth ({behind}): nothing to reorder"
    # a producer made after the growth (fresh metadata), as the one a user restarts or that refreshed its metadata
    acks += produce(kq.bootstrap, topic, keyed_rounds(KEYS, PER_KEY, PER_KEY))
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
