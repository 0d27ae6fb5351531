"""Which executor read path runs: the native one where it can, the Python one as the fallback (extension absent,
a Python callback in the configuration, or asked for), logged once at INFO; ``readPath=native`` where the native
reader cannot run fails saying why and how to fix it."""

from __future__ import annotations

import logging
import sys

import pytest
from pyspark.sql import DataFrame

from samza_devkit.frames import assert_same_rows
from samza_devkit.kafka_helpers import produce
from spark_samza_source.core.errors import ConfigError
from spark_samza_source.kafka.client_conf import TOKEN_PROVIDER_KEY
from spark_samza_source.kafka.errors import KafkaSourceError
from spark_samza_source.kafka.executor import native_reader
from spark_samza_source.kafka.executor.consumer_cache import ConsumerCache
from spark_samza_source.kafka.executor.reader import KafkaReadSettings, read_ranges
from spark_samza_source.kafka.input_partition import KafkaRange
from spark_samza_source.kafka.options import KafkaSourceOptions

LOGGER = "spark_samza_source.kafka.executor.native_reader"
EXTENSION = "spark_samza_source.kafka.executor._native_reader"


@pytest.fixture
def fresh_choice(monkeypatch):
    """The process's path decision forgotten (restored afterwards): the next read decides and logs again."""
    monkeypatch.setattr(native_reader, "_loaded", None)
    monkeypatch.setattr(native_reader, "_logged", set())


@pytest.fixture
def without_extension(fresh_choice, monkeypatch):
    """The extension cannot be imported, as on a pure wheel or where it failed to compile."""
    monkeypatch.setitem(sys.modules, EXTENSION, None)  # `import` raises ImportError
    monkeypatch.delattr("spark_samza_source.kafka.executor._native_reader", raising=False)


def test_the_native_path_is_the_default_where_it_is_built(fresh_choice, caplog):
    with caplog.at_level(logging.INFO, logger=LOGGER):
        assert native_reader.choose_read_path(KafkaReadSettings(False, True), {"bootstrap.servers": "b:9092"}) \
            == "native"
        native_reader.choose_read_path(KafkaReadSettings(False, True), {"bootstrap.servers": "b:9092"})
    assert [r.getMessage() for r in caplog.records] == [
        "samza-kafka executor reads through the native path (extension and librdkafka loaded)"]


def test_without_the_extension_auto_reads_through_the_python_path_and_says_why(
        kafka_broker, kafka_topic, without_extension, caplog):
    bs = kafka_broker.bootstrap_servers
    topic = kafka_topic(1)
    produce(bs, topic, [(None, b"v%d" % i) for i in range(7)])
    cache = ConsumerCache(1)
    try:
        with caplog.at_level(logging.INFO, logger=LOGGER):
            batches = list(read_ranges({"bootstrap.servers": bs}, "Partition 0", [KafkaRange(topic, 0, 2, 7)],
                                       KafkaReadSettings(False, True), cache=cache))
    finally:
        cache.close_all()
    assert [v.as_py() for b in batches for v in b.column("value")] == [b"v%d" % i for i in range(2, 7)]
    assert cache.created == 1  # a confluent-kafka consumer of the Python path's cache
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert len(infos) == 1 and "through the python path" in infos[0]
    assert "native reader unavailable" in infos[0] and "extension is not built" in infos[0]


def test_read_path_native_where_it_cannot_run_fails_saying_why_and_how_to_fix(without_extension):
    with pytest.raises(KafkaSourceError) as info:
        native_reader.choose_read_path(KafkaReadSettings(False, True, read_path="native"),
                                       {"bootstrap.servers": "b:9092"})
    msg = str(info.value)
    assert "'readPath' is 'native'" in msg and "extension is not built" in msg
    assert "platform wheel" in msg and "'auto' or 'python'" in msg


def test_a_python_callback_in_the_configuration_selects_the_python_path(fresh_choice, caplog):
    conf = {"bootstrap.servers": "b:9092", TOKEN_PROVIDER_KEY: "my.tokens.provide"}
    with caplog.at_level(logging.INFO, logger=LOGGER):
        assert native_reader.choose_read_path(KafkaReadSettings(False, True), conf) == "python"
    assert "OAUTHBEARER token provider" in caplog.text
    with pytest.raises(KafkaSourceError, match="OAUTHBEARER token provider"):
        native_reader.choose_read_path(KafkaReadSettings(False, True, read_path="native"), conf)
    assert native_reader.choose_read_path(KafkaReadSettings(False, True, read_path="python"), {}) == "python"


def test_read_path_option_is_parsed_and_checked():
    base = {"kafka.bootstrap.servers": "b:9092", "subscribe": "t", "job.name": "j"}
    assert KafkaSourceOptions.parse(base).read_path == "auto"
    assert KafkaSourceOptions.parse({**base, "readPath": "Python"}).read_path == "python"
    with pytest.raises(ConfigError, match="'readPath' must be one of auto, native, python"):
        KafkaSourceOptions.parse({**base, "readPath": "fast"})


@pytest.mark.spark
def test_a_spark_read_gives_the_same_rows_through_either_path(spark, kafka_broker, kafka_topic):
    """The option reaches the executors: a batch read through each path, headers included, gives the same rows."""
    bs = kafka_broker.bootstrap_servers
    topic = kafka_topic(2)
    produce(bs, topic, [(None if i % 3 else b"k", None if i % 5 == 0 else b"v%d" % i,
                         [("h", None), ("g", b"1")] if i % 2 else None, i % 2) for i in range(40)])

    def read(path: str) -> DataFrame:
        return (spark.read.format("samza-kafka")
                .options(**{"kafka.bootstrap.servers": bs, "subscribe": topic, "includeHeaders": "true",
                            "readPath": path}).load())

    native = read("native")
    rows = native.collect()
    assert len(rows) == 40
    assert any(r.headers and r.headers[0].value is None for r in rows)
    assert_same_rows(read("python"), native, key=["partition", "offset"])
