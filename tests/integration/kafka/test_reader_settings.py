"""The librdkafka settings a real ``read_ranges`` consumer is created with (the dev broker), on both read paths:
the bounded-read defaults, and a user's ``kafka.*`` settings winning over them."""

from __future__ import annotations

import logging

from confluent_kafka import Consumer

from samza_devkit.kafka_helpers import produce
from spark_samza_source.kafka.executor.native_reader import new_native_consumer
from spark_samza_source.kafka.executor.reader import read_ranges
from spark_samza_source.kafka.input_partition import KafkaRange


def _read_with_recorded_conf(path: str, new_cache, bootstrap: str, topic: str, user: dict) -> tuple[int, list[dict]]:
    seen: list[dict] = []

    def factory(conf):
        seen.append(dict(conf))
        if path == "native":
            return new_native_consumer(conf)
        return Consumer({**conf, "logger": logging.getLogger("test")})

    cache = new_cache(1, factory)
    try:
        rows = sum(b.num_rows for b in read_ranges({"bootstrap.servers": bootstrap, **user}, "Partition 0",
                                                   [KafkaRange(topic, 0, 0, 5)], include_headers=False,
                                                   fail_on_data_loss=True, cache=cache, read_path=path))
    finally:
        cache.close_all()
    return rows, seen


def test_reader_consumer_gets_bounded_read_defaults(read_path, new_reader_cache, kafka_broker, kafka_topic):
    topic = kafka_topic(1)
    produce(kafka_broker.bootstrap_servers, topic, [(None, b"v%d" % i, None, 0) for i in range(5)])
    rows, seen = _read_with_recorded_conf(read_path, new_reader_cache, kafka_broker.bootstrap_servers, topic, {})
    assert rows == 5 and len(seen) == 1
    conf = seen[0]
    assert conf["fetch.queue.backoff.ms"] == "10"  # not librdkafka's 1000 ms idle wait after a full queue
    assert conf["fetch.wait.max.ms"] == "1"  # a log-end fetch in flight delays the next read by at most this
    assert conf["queued.max.messages.kbytes"] == "16384"
    assert conf["max.partition.fetch.bytes"] == str(4 * 1024 * 1024)
    assert conf["auto.offset.reset"] == "error" and conf["enable.auto.commit"] == "false"


def test_user_settings_win_and_librdkafka_accepts_them(read_path, new_reader_cache, kafka_broker, kafka_topic):
    topic = kafka_topic(1)
    produce(kafka_broker.bootstrap_servers, topic, [(None, b"v%d" % i, None, 0) for i in range(5)])
    user = {"fetch.queue.backoff.ms": "250", "queued.max.messages.kbytes": "4096", "fetch.wait.max.ms": "20"}
    rows, seen = _read_with_recorded_conf(read_path, new_reader_cache, kafka_broker.bootstrap_servers, topic, user)
    assert rows == 5
    assert {k: seen[0][k] for k in user} == user
