"""Malformed startpoints (an unknown @type, a negative Kafka offset) are logged once each at WARN, counted in the
progress (``latestOffset["malformedStartpoints"]``) and never block valid ones. Driven as Spark's
runner calls the reader, against Apache Kafka."""

from __future__ import annotations

import logging

from pyspark.sql.streaming.datasource import ReadAllAvailable

from samza_devkit.kafka_helpers import create_topic, produce, unique_topic
from spark_samza_source.core.model import SystemStreamPartition
from spark_samza_source.core.startpoint import StartpointSpecific
from spark_samza_source.core.startpoint_manager import NAMESPACE, StartpointManager
from spark_samza_source.kafka.options import KafkaSourceOptions
from spark_samza_source.kafka.source import SamzaKafkaStreamReader
from spark_samza_source.metadata import open_store


def test_malformed_startpoints_are_warned_once_counted_and_do_not_block_valid_ones(kafka_broker, tmp_path, caplog):
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap, unique_topic("spbad"), 3)
    produce(bootstrap, topic, [(b"k", f"{i}".encode(), None, i % 3) for i in range(30)])
    uri = f"file://{tmp_path}/meta"
    reader = SamzaKafkaStreamReader(KafkaSourceOptions.parse({
        "kafka.bootstrap.servers": bootstrap, "subscribe": topic, "job.name": "spbad", "metadata.store": uri,
        "startingOffsets": "latest", "startpoint.pollInterval": "0"}), None)
    try:
        initial = reader.initialOffset()
        store = open_store(uri, "spbad")
        manager = StartpointManager(store)
        manager.write(SystemStreamPartition("kafka", topic, 0), StartpointSpecific("4"))
        manager.write(SystemStreamPartition("kafka", topic, 1), StartpointSpecific("-5"))
        store.put(NAMESPACE, f"kafka.{topic}.2", {"@type": "StartpointBogus", "creationTimestamp": 1})
        with caplog.at_level(logging.WARNING):
            end = reader.latestOffset(initial, ReadAllAvailable())
            assert reader.reportLatestOffset()["malformedStartpoints"] == 2
            produce(bootstrap, topic, [(b"k", b"x", None, 0)])
            again = reader.latestOffset(end, ReadAllAvailable())
            assert reader.reportLatestOffset()["malformedStartpoints"] == 2
        ranges = [(r.partition, r.start, r.end) for part in reader.partitions(initial, end) for r in part.reads]
        assert ranges == [(0, 4, 10)], "the valid startpoint was not applied"
        assert [(r.partition, r.start, r.end) for p in reader.partitions(end, again) for r in p.reads] == [(0, 10, 11)]
        warned = [r for r in caplog.records if r.levelno == logging.WARNING]
        for key in (f"kafka.{topic}.1", f"kafka.{topic}.2"):
            mentions = [r for r in warned if key in r.getMessage() and "malformed" in r.getMessage()]
            assert len(mentions) == 1, [r.getMessage() for r in warned]
        assert {k for k, _ in store.list(NAMESPACE).items()} >= {f"kafka.{topic}.2"}
    finally:
        lease = getattr(reader.coordinator, "_lease", None)
        if lease is not None:
            lease.release()
