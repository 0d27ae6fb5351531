"""The fault-injection seam (``source/fault_hooks.py``) and the development kit's hooks behind it.

A normal run carries no ``testing.*`` option: the seam then hands the read path's batches back untouched and never
imports a hook module. The end-to-end proofs that the hooks do what the recovery tests need are
``tests/integration/faults/test_process_faults.py`` (a worker killed inside ``read()``) and
``tests/integration/kinesis/test_kinesis_source_reads.py`` (a task failing after recording its end).
"""

from __future__ import annotations

import dataclasses
import json
import pickle
import subprocess
import sys
import textwrap

import pytest

from spark_samza_source.core.errors import ConfigError
from spark_samza_source.kafka.executor.reader import read_ranges
from spark_samza_source.kafka.input_partition import KafkaRange, KafkaTaskPartition
from spark_samza_source.kafka.options import KafkaSourceOptions
from spark_samza_source.kafka.source import SamzaKafkaStreamReader
from spark_samza_source.kinesis.input_partition import KinesisTaskPartition
from spark_samza_source.kinesis.options import KinesisSourceOptions
from spark_samza_source.kinesis.positions import ShardPosition
from spark_samza_source.kinesis.source import SamzaKinesisStreamReader
from spark_samza_source.source.fault_hooks import (
    NO_FAULT_HOOKS,
    SHARD_END_RECORDED,
    TASK_HANDED_BATCH,
    TASK_READ_DONE,
    FaultHookOptions,
    report,
    reporting_batches,
)
from spark_samza_source.source.worker_heap import freezing_after_read

DEVKIT_HOOKS = "samza_devkit.fault_hooks"
KAFKA = {"kafka.bootstrap.servers": "b:9092", "subscribe": "t", "job.name": "j", "metadata.store": "memory:"}
KINESIS = {"streamName": "s", "job.name": "j", "metadata.store": "memory:"}
PARSERS = [(KafkaSourceOptions.parse, KAFKA), (KinesisSourceOptions.parse, KINESIS)]


@pytest.fixture
def recording_hooks(tmp_path, monkeypatch):
    """A hook module of this test's own, on sys.path: ``events`` lists what the seam reported."""
    name = f"recording_hooks_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent("""
        events = []

        def on_event(event, options, **details):
            events.append((event, dict(options), details))
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def _kafka_reader(**extra) -> SamzaKafkaStreamReader:
    return SamzaKafkaStreamReader(KafkaSourceOptions.parse({**KAFKA, **extra}), schema=None)


@pytest.mark.parametrize(("parse", "minimal"), PARSERS)
def test_default_options_carry_no_fault_hooks(parse, minimal):
    hooks = parse(minimal).fault_hooks
    assert hooks == NO_FAULT_HOOKS and not hooks and hooks.module is None


def test_without_testing_options_the_read_path_hands_back_its_batches_and_imports_no_hook_module(monkeypatch):
    monkeypatch.delitem(sys.modules, DEVKIT_HOOKS, raising=False)
    batches = _kafka_reader().read(KafkaTaskPartition("Partition 0", (KafkaRange("t", 0, 5, 5),)))
    # the reader's own generator, under the worker-heap step only (source/worker_heap.py): no hook wrapper
    assert batches.gi_code is freezing_after_read.__code__
    assert batches.gi_frame.f_locals["batches"].gi_code is read_ranges.__code__
    assert list(batches) == []
    source = iter([1, 2])
    assert reporting_batches(NO_FAULT_HOOKS, source, task="Task-0") is source
    assert report(NO_FAULT_HOOKS, SHARD_END_RECORDED, task="Task-0") is None
    assert DEVKIT_HOOKS not in sys.modules


@pytest.mark.parametrize(("parse", "minimal"), PARSERS)
def test_a_testing_option_without_fault_hooks_fails_naming_both(parse, minimal):
    with pytest.raises(ConfigError) as err:
        parse({**minimal, "testing.failAfterRecord": "/tmp/marker"})
    assert "'testing.failafterrecord'" in str(err.value) and "'testing.faultHooks'" in str(err.value)


@pytest.mark.parametrize("module", ["no_such_module_anywhere.hooks", "not a module", "samza_devkit..x"])
def test_fault_hooks_naming_no_importable_module_fails(module):
    with pytest.raises(ConfigError, match="option 'testing.faultHooks' names .* not an importable module"):
        KafkaSourceOptions.parse({**KAFKA, "testing.faultHooks": module})


def test_the_testing_options_are_a_frozen_picklable_mapping_that_travels_with_the_options():
    options = KinesisSourceOptions.parse({**KINESIS, "testing.faultHooks": DEVKIT_HOOKS,
                                          "testing.failAfterRecord": "/tmp/m"})
    hooks = options.fault_hooks
    assert dict(hooks) == {"testing.faulthooks": DEVKIT_HOOKS, "testing.failafterrecord": "/tmp/m"}
    assert hooks["testing.failAfterRecord"] == "/tmp/m" and hooks.module == DEVKIT_HOOKS
    with pytest.raises(dataclasses.FrozenInstanceError):
        hooks.pairs = ()
    assert pickle.loads(pickle.dumps(options)).fault_hooks == hooks


def test_the_kafka_read_path_reports_its_batches_to_the_named_module(recording_hooks):
    reader = _kafka_reader(**{"testing.faultHooks": recording_hooks, "testing.anything": "x"})
    assert list(reader.read(KafkaTaskPartition("Partition 0", (KafkaRange("t", 0, 5, 5),)))) == []
    events = sys.modules[recording_hooks].events
    options = {"testing.faulthooks": recording_hooks, "testing.anything": "x"}
    assert events == [(TASK_READ_DONE, options, {"task": "Partition 0", "batches": 0, "planned_rows": 0})]

    events.clear()
    assert list(reporting_batches(reader.options.fault_hooks, iter(["a", "b"]), task="T", planned_rows=7)) == \
        ["a", "b"]
    assert [(e, d) for e, _, d in events] == [
        (TASK_HANDED_BATCH, {"task": "T", "planned_rows": 7, "batch_number": 1}),
        (TASK_HANDED_BATCH, {"task": "T", "planned_rows": 7, "batch_number": 2}),
        (TASK_READ_DONE, {"task": "T", "planned_rows": 7, "batches": 2}),
    ]


def test_the_kinesis_read_path_reports_its_batches_to_the_named_module(recording_hooks):
    # as samza-kafka's: a task with nothing to read still reports its end (TASK_HANDED_BATCH per batch: the
    # worker-kill test in tests/integration/kinesis/test_kinesis_source_reads.py)
    options = KinesisSourceOptions.parse({**KINESIS, "testing.faultHooks": recording_hooks})
    reader = SamzaKinesisStreamReader(options, schema=None)
    assert list(reader.read(KinesisTaskPartition("Task-0", ()))) == []
    events = sys.modules[recording_hooks].events
    assert [(e, d) for e, _, d in events] == [(TASK_READ_DONE, {"task": "Task-0", "shards": 0, "batches": 0})]


def test_a_hook_module_without_on_event_fails_clearly(tmp_path, monkeypatch):
    (tmp_path / "hookless_module_x.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    hooks = FaultHookOptions((("testing.faulthooks", "hookless_module_x"),))
    with pytest.raises(ConfigError, match="has no on_event"):
        report(hooks, SHARD_END_RECORDED)
    sys.modules.pop("hookless_module_x", None)


# ---- the development kit's hooks ---------------------------------------------------------------------------------

def _devkit(**options) -> FaultHookOptions:
    return FaultHookOptions(tuple(sorted({"testing.faulthooks": DEVKIT_HOOKS,
                                          **{k.lower(): v for k, v in options.items()}}.items())))


def test_devkit_fail_after_record_fails_once_after_a_shard_with_records(tmp_path):
    marker, hold = tmp_path / "failed", tmp_path / "release"
    hooks = _devkit(**{"testing.failAfterRecord": str(marker), "testing.failAfterRecordHold": str(hold)})
    end = ShardPosition.after_sequence("4960", 2)
    report(hooks, SHARD_END_RECORDED, task="Task-0", shard_id="shardId-0", end=end, records=0)
    assert not marker.exists()  # a shard the attempt read nothing from: no failure
    hold.touch()
    with pytest.raises(RuntimeError, match="injected failure after recording the end of shardId-0"):
        report(hooks, SHARD_END_RECORDED, task="Task-0", shard_id="shardId-0", end=end, records=3)
    assert marker.read_text() == f"shardId-0 {json.dumps(end.to_json())}\n"
    report(hooks, SHARD_END_RECORDED, task="Task-0", shard_id="shardId-0", end=end, records=3)  # once only
    assert (tmp_path / "failed.after").read_text() == f"shardId-0 {json.dumps(end.to_json())}\n"  # the retry


def test_devkit_fail_in_read_once_kills_the_process_after_its_first_batch_once(tmp_path):
    marker = tmp_path / "died"
    script = textwrap.dedent(f"""
        from spark_samza_source.source.fault_hooks import FaultHookOptions, reporting_batches
        hooks = FaultHookOptions((("testing.failinreadonce", {str(marker)!r}),
                                  ("testing.faulthooks", {DEVKIT_HOOKS!r})))
        for batch in reporting_batches(hooks, iter(["a", "b"]), task="Partition 1", planned_rows=2):
            print(batch, flush=True)
    """)
    first = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (first.returncode, first.stdout) == (1, "a\n")  # handed Spark one batch, then died
    task, pid = marker.read_text().split("\t")
    assert task == "Partition 1" and int(pid) > 0
    again = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (again.returncode, again.stdout) == (0, "a\nb\n")  # the retry: the marker exists
