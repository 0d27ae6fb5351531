"""Spark's checkpoint offset log (``<checkpoint>/offsets/<n>``, ``commits/<n>``) is read in one place,
``samza_config/offset_log.py``, which both ``starting_offsets_from_spark_checkpoint`` and the operator CLI use."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import spark_samza_source
from spark_samza_source.samza_config import offset_log, starting_offsets_from_spark_checkpoint
from spark_samza_source.samza_config.offset_log import CheckpointDirError, OffsetLog

ROOT = Path(spark_samza_source.__file__).resolve().parent
READER = "samza_config/offset_log.py"
#: modules where the words mean something the test cannot tell apart from reading the log
OTHER_MEANINGS = {
    "ops/cli/commands.py": "'offsets', the unit of Kafka lag in the lag table",
    "kinesis/source.py": "an error message naming the offset file to restore or delete",
}


def _names_of_the_log_directories(tree: ast.Module) -> list[int]:
    """Lines where a string literal (not a docstring) names ``offsets`` or ``commits`` as a directory."""
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docs.add(id(first.value))
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
            and node.value.strip("/") in ("offsets", "commits")]


def test_only_the_offset_log_module_names_the_checkpoint_directories():
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        module = path.relative_to(ROOT).as_posix()
        lines = _names_of_the_log_directories(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        if lines:
            found[module] = lines
    assert READER in found  # guards the test against passing vacuously after a rename
    assert [m for m in OTHER_MEANINGS if not (ROOT / m).is_file()] == []
    assert [m for m in found if m != READER and m not in OTHER_MEANINGS] == [], found


def write_checkpoint(root: Path, batches: dict[int, str], committed: list[int]) -> Path:
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    for batch, line in batches.items():
        (root / "offsets" / str(batch)).write_text(f'v1\n{{"batchWatermarkMs":0}}\n{line}')
        (root / "offsets" / f".{batch}.crc").write_text("crc")
    for batch in committed:
        (root / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    return root


def test_batches_and_the_last_committed_one(tmp_path):
    root = write_checkpoint(tmp_path / "chk", {0: "a", 2: "b", 10: "c"}, committed=[0, 2, 3])
    for location in (str(root), f"file://{root}"):
        log = OffsetLog(location)
        assert log.batch_ids() == [0, 2, 10]  # numeric order, .crc files left out
        assert log.last_committed_batch() == 2  # 3 has a commit marker but no offset file, 10 is not committed
        assert log.source_lines(10) == ["c"]
    assert OffsetLog(str(write_checkpoint(tmp_path / "none", {0: "a"}, committed=[]))).last_committed_batch() is None
    with pytest.raises(FileNotFoundError):
        OffsetLog(str(tmp_path / "missing")).last_committed_batch()
    with pytest.raises(CheckpointDirError, match="no offsets/ directory"):
        OffsetLog(str(tmp_path / "missing")).batch_ids()


def test_starting_offsets_from_a_spark_checkpoint_read_through_the_offset_log(tmp_path, monkeypatch):
    root = write_checkpoint(tmp_path / "chk", {0: '{"orders":{"0":5}}', 1: '{"orders":{"0":9}}'}, committed=[0])
    read: list[tuple[str, int]] = []
    original = offset_log.OffsetLog.source_lines

    def spy(self, batch_id):
        read.append((self.location, batch_id))
        return original(self, batch_id)

    monkeypatch.setattr(offset_log.OffsetLog, "source_lines", spy)
    assert starting_offsets_from_spark_checkpoint(root) == '{"orders":{"0":5}}'
    assert read == [(str(root), 0)]
