"""``startingOffsets`` from a Samza checkpoint-tool output or a Spark Kafka query's checkpoint
(``samza_config/checkpoints.py``, reading the offset log through ``samza_config/offset_log.py``)."""

import json
from pathlib import Path

import pytest

from spark_samza_source.core.errors import ConfigError
from spark_samza_source.kafka.options import SPECIFIC, KafkaSourceOptions
from spark_samza_source.samza_config import (
    starting_offsets_from_samza_checkpoint,
    starting_offsets_from_spark_checkpoint,
)


def parse_kafka(options) -> KafkaSourceOptions:
    return KafkaSourceOptions.parse({k.lower(): v for k, v in options.items()})  # Spark lower-cases names


# ---- resuming where Samza or Spark's Kafka source stopped -------------------------------------------------------

SOURCE_OPTIONS = {"kafka.bootstrap.servers": "b:9092", "subscribe": "orders", "job.name": "j"}


def test_starting_offsets_from_samza_checkpoint_tool_output():
    text = (
        "2026-01-01 INFO Using the rewritten config: {...}\n"
        "INFO Current checkpoint for task: Partition 0: "
        "tasknames.Partition 0.systems.kafka.streams.orders.partitions.0 = 41\n"
        "INFO Current checkpoint for task: Partition 1: "
        "tasknames.Partition 1.systems.kafka.streams.orders.v2.partitions.1 = 9\n"
        "tasknames.Partition 0.systems.kafka.streams.rates.partitions.0=5\n"
        "tasknames.Partition 1.systems.kafka.streams.rates.partitions.0=3\n"
        "tasknames.Partition 0.systems.other.streams.x.partitions.0=1\n"
    )
    result = starting_offsets_from_samza_checkpoint(text, system="kafka")
    # Samza checkpoints the last processed offset: resume after it; a broadcast SSP at its smallest.
    assert json.loads(result) == {"orders": {"0": 42}, "orders.v2": {"1": 10}, "rates": {"0": 4}}
    starting = parse_kafka({**SOURCE_OPTIONS, "startingOffsets": result}).starting
    assert starting.kind == SPECIFIC and starting.per_partition["orders"] == {0: 42}
    assert "pass system=" in str(pytest.raises(ConfigError, starting_offsets_from_samza_checkpoint, text).value)
    with pytest.raises(ConfigError, match="no Samza checkpoint line"):
        starting_offsets_from_samza_checkpoint("nothing here\n")
    with pytest.raises(ConfigError, match="line 1: offset 'abc'"):
        starting_offsets_from_samza_checkpoint("tasknames.P.systems.kafka.streams.t.partitions.0=abc")


def spark_checkpoint(root: Path, batches: dict[int, str], committed: list[int]) -> Path:
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    for batch, offset_json in batches.items():
        meta = '{"batchWatermarkMs":0,"batchTimestampMs":1700000000000,"conf":{}}'
        (root / "offsets" / str(batch)).write_text(f"v1\n{meta}\n{offset_json}")
        (root / "offsets" / f".{batch}.crc").write_text("crc")
    for batch in committed:
        (root / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    return root


def test_starting_offsets_from_spark_kafka_checkpoint(tmp_path):
    root = spark_checkpoint(tmp_path / "chk", {
        0: '{"orders":{"1":10,"0":5}}',
        1: '{"orders":{"0":20,"1":30},"payments":{"0":7}}',
        2: '{"orders":{"0":99,"1":99},"payments":{"0":99}}',  # planned, never committed
    }, committed=[0, 1])
    result = starting_offsets_from_spark_checkpoint(root)
    assert json.loads(result) == {"orders": {"0": 20, "1": 30}, "payments": {"0": 7}}
    assert starting_offsets_from_spark_checkpoint(f"file://{root}") == result
    starting = parse_kafka({**SOURCE_OPTIONS, "subscribe": "orders,payments", "startingOffsets": result}).starting
    assert starting.per_partition == {"orders": {0: 20, 1: 30}, "payments": {0: 7}}


def test_starting_offsets_from_spark_checkpoint_errors(tmp_path):
    with pytest.raises(ConfigError, match="not a readable Spark checkpoint"):
        starting_offsets_from_spark_checkpoint(tmp_path / "missing")
    empty = spark_checkpoint(tmp_path / "empty", {0: '{"orders":{"0":1}}'}, committed=[])
    with pytest.raises(ConfigError, match="no committed batch"):
        starting_offsets_from_spark_checkpoint(empty)
    other = spark_checkpoint(tmp_path / "other", {0: '{"version":1,"jobModel":{}}'}, committed=[0])
    with pytest.raises(ConfigError, match="not a Kafka source offset"):
        starting_offsets_from_spark_checkpoint(other)
    with pytest.raises(ConfigError, match="source #1"):
        starting_offsets_from_spark_checkpoint(spark_checkpoint(tmp_path / "one", {0: '{"t":{"0":1}}'}, [0]),
                                               source=1)
