"""The effective librdkafka configuration of an executor consumer: throughput defaults the user can override,
and the settings the reader relies on, which the user cannot."""

from __future__ import annotations

from spark_samza_source.kafka.executor.consumer_cache import READER_DEFAULTS, READER_FORCED, consumer_config

BOOT = {"bootstrap.servers": "b:9092"}


def test_bounded_range_read_defaults():
    conf = consumer_config(BOOT)
    # 1000 ms (librdkafka's default) left the reader idle ~75% of a single-partition read (benchmarks/README.md)
    assert conf["fetch.queue.backoff.ms"] == "10"
    assert conf["fetch.wait.max.ms"] == "1"  # a log-end fetch in flight delays the next read by at most this
    assert conf["queued.max.messages.kbytes"] == "16384"  # memory bound per partition (peak RSS target)
    assert conf["max.partition.fetch.bytes"] == str(4 * 1024 * 1024)
    assert "queued.min.messages" not in conf  # librdkafka's 100000 kept: lower halved the rate, higher did not help
    assert conf["isolation.level"] == "read_uncommitted"
    assert {k: conf[k] for k in READER_FORCED} == {
        "enable.auto.commit": "false", "enable.auto.offset.store": "false", "auto.offset.reset": "error",
        "enable.partition.eof": "false"}


def test_user_kafka_options_win_over_every_default():
    user = {key: "7" for key in READER_DEFAULTS}
    conf = consumer_config({**BOOT, **user})
    assert {k: conf[k] for k in READER_DEFAULTS} == user


def test_user_cannot_override_what_the_reader_relies_on():
    conf = consumer_config({**BOOT, "auto.offset.reset": "earliest", "enable.auto.commit": "true"})
    assert conf["auto.offset.reset"] == "error" and conf["enable.auto.commit"] == "false"
