"""``startingOffsets`` from a Samza checkpoint-tool output or a Spark Kafka query's checkpoint
(``samza_config/checkpoints.py``), and the one reader of Spark's checkpoint offset log (``offsets/<n>``,
``commits/<n>``): ``samza_config/offset_log.py``, which both that function and the operator CLI use."""

import ast
import json
from pathlib import Path

import pytest

import spark_samza_source
from spark_samza_source.core.errors import CheckpointDirError, ConfigError
from spark_samza_source.kafka.options import KafkaSourceOptions
from spark_samza_source.kafka.starting import SpecificOffsets
from spark_samza_source.samza_config import (
    offset_log,
    starting_offsets_from_samza_checkpoint,
    starting_offsets_from_spark_checkpoint,
)
from spark_samza_source.samza_config.offset_log import OffsetLog

ROOT = Path(spark_samza_source.__file__).resolve().parent
READER = "samza_config/offset_log.py"
#: modules where the words mean something the test cannot tell apart from reading the log
OTHER_MEANINGS = {
    "ops/cli/commands/lag.py": "'offsets', the unit of Kafka lag in the lag table",
    "kinesis/source.py": "an error message naming the offset file to restore or delete",
    "ops/metrics.py": "'offsets', the unit of samza-kafka lag figures and log lines",
}


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
    assert isinstance(starting, SpecificOffsets) and starting.per_partition["orders"] == {0: 42}
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


def test_an_offset_log_error_reaches_the_importers_caller_with_its_condition_once(tmp_path):
    root = spark_checkpoint(tmp_path / "chk", {0: '{"orders":{"0":1}}'}, committed=[0])
    (root / "offsets" / "0").write_text("not an offset log entry")
    with pytest.raises(ConfigError) as err:
        starting_offsets_from_spark_checkpoint(root)
    assert err.value.condition == "SAMZA_SPARK_CHECKPOINT_ENTRY_INVALID"
    assert str(err.value).startswith("[SAMZA_SPARK_CHECKPOINT_ENTRY_INVALID] offset file 0 in ")
    assert str(err.value).count("[SAMZA_") == 1


# ---- the offset log is read in one place --------------------------------------------------------------------


def _names_of_the_log_directories(tree: ast.Module) -> list[int]:
    """Lines where a string literal (not a docstring) names ``offsets`` or ``commits`` as a directory."""
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and ast.get_docstring(node, clean=False) is not None}
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
            and node.value.strip("/") in ("offsets", "commits")]


def test_only_the_offset_log_module_names_the_checkpoint_directories():
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        lines = _names_of_the_log_directories(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        if lines:
            found[path.relative_to(ROOT).as_posix()] = lines
    assert READER in found  # guards the test against passing vacuously after a rename
    assert [m for m in OTHER_MEANINGS if not (ROOT / m).is_file()] == []
    assert [m for m in found if m != READER and m not in OTHER_MEANINGS] == [], found


def test_offset_log_batches_and_the_last_committed_one(tmp_path):
    root = spark_checkpoint(tmp_path / "chk", {0: "a", 2: "b", 10: "c"}, committed=[0, 2, 3])
    for location in (str(root), f"file://{root}"):
        log = OffsetLog(location)
        assert log.batch_ids() == [0, 2, 10]  # numeric order, .crc files left out
        assert log.last_committed_batch() == 2  # 3 has a commit marker but no offset file, 10 is not committed
        assert log.source_lines(10) == ["c"]
    assert OffsetLog(str(spark_checkpoint(tmp_path / "none", {0: "a"}, committed=[]))).last_committed_batch() is None
    with pytest.raises(FileNotFoundError):
        OffsetLog(str(tmp_path / "missing")).last_committed_batch()
    with pytest.raises(CheckpointDirError, match="no offsets/ directory"):
        OffsetLog(str(tmp_path / "missing")).batch_ids()


def test_starting_offsets_from_a_spark_checkpoint_are_read_through_the_offset_log(tmp_path, monkeypatch):
    root = spark_checkpoint(tmp_path / "chk", {0: '{"orders":{"0":5}}', 1: '{"orders":{"0":9}}'}, committed=[0])
    read: list[tuple[str, int]] = []
    original = offset_log.OffsetLog.source_lines

    def spy(self, batch_id):
        read.append((self.location, batch_id))
        return original(self, batch_id)

    monkeypatch.setattr(offset_log.OffsetLog, "source_lines", spy)
    assert starting_offsets_from_spark_checkpoint(root) == '{"orders":{"0":5}}'
    assert read == [(str(root), 0)]
