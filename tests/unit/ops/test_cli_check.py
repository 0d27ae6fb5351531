"""``samza-source check`` on a ``file:`` store: a healthy job reads clean (exit 0); a job with damaged records has
each reported with its kind's verdict and repair, and exits 1 when a query would stop on one (a fail kind) and 0
when the query skips them all (skip kinds)."""

from __future__ import annotations

import json
import uuid

import pytest

from samza_devkit.damaged_records import KINDS, plant
from spark_samza_source.core.damage import Verdict, rule_for_namespace
from spark_samza_source.metadata.filesystem import FileSystemMetadataStore
from spark_samza_source.ops.cli import main


@pytest.fixture
def job(tmp_path) -> tuple[FileSystemMetadataStore, list[str]]:
    """A store holding valid records of every kind, and the command line that checks it."""
    store = FileSystemMetadataStore.local(str(tmp_path), f"job-{uuid.uuid4().hex[:8]}")
    for case in KINDS:
        case.seed(store)
    return store, ["--json", "check", "--store", tmp_path.as_uri(), "--job", store.job_name]


def run(argv: list[str], capsys) -> tuple[int, dict]:
    code = main(argv)
    return code, json.loads(capsys.readouterr().out)


def test_a_healthy_job_reads_clean(job, capsys):
    """Backs Guarantees (the damaged-record rule): check finds nothing on a healthy job."""
    _, argv = job
    code, out = run(argv, capsys)
    assert code == 0 and out["damaged"] == [] and out["stopsTheQuery"] is False
    assert all(count >= 1 for count in out["records"].values()), out["records"]


def test_a_damaged_record_of_a_skip_kind_is_reported_and_exits_0(job, capsys):
    store, argv = job
    startpoint = next(case for case in KINDS if case.kind == "startpoint")
    plant(store, startpoint.namespace, startpoint.damaged_key, "truncated")
    code, out = run(argv, capsys)
    assert code == 0 and out["stopsTheQuery"] is False
    [finding] = out["damaged"]
    assert finding["kind"] == "startpoint" and finding["verdict"] == Verdict.SKIP.value
    assert "not valid JSON" in finding["problem"] and finding["location"].startswith("file ")
    assert finding["repair"] == rule_for_namespace(startpoint.namespace).repair


def test_damaged_records_of_every_kind_are_each_reported_and_a_fail_kind_exits_1(job, capsys):
    """Backs Guarantees (the damaged-record rule): check reports every damaged record with its verdict."""
    store, argv = job
    for case in KINDS:
        plant(store, case.namespace, case.damaged_key, "another-key")
    store.put("shard-tasks", "orders-stream", {"format": 1, "stream": "orders-stream", "numTasks": 1, "batch": 0,
                                               "shards": {"shardId-0": "Task-7"}})  # readable, but not valid
    code, out = run(argv, capsys)
    assert code == 1 and out["stopsTheQuery"] is True
    kinds = sorted(f["kind"] for f in out["damaged"])
    assert kinds == sorted([case.kind for case in KINDS] + ["shard tasks"])
    beyond = [f for f in out["damaged"] if "orders-stream" in f["location"]]
    assert len(beyond) == 1 and "not one of its 1 tasks" in beyond[0]["problem"]


def test_the_text_report_names_each_damaged_record_and_the_repair(job, capsys):
    store, argv = job
    shard_tasks = next(case for case in KINDS if case.kind == "shard tasks")
    plant(store, shard_tasks.namespace, shard_tasks.damaged_key, "newer-format")
    assert main(argv[1:]) == 1
    text = capsys.readouterr().err  # a command that exits non-zero reports on stderr
    assert "1 damaged; a query of this job would stop" in text
    assert "shard tasks" in text and "fail" in text and "newer" in text


def test_a_chunked_job_model_reads_clean_and_a_missing_chunk_is_the_job_models_damage(job, capsys):
    """A job model of 10,000 partitions is stored in chunks behind a pointer (core/large_values.py): check reads it
    through the pointer, and reports a chunk missing under it as the job model's damage, with its verdict."""
    from spark_samza_source.core.grouping import GroupByPartitionFixedTasks
    from spark_samza_source.core.jobmodel_store import JobModelStore
    from spark_samza_source.core.model import SystemStreamPartition
    from spark_samza_source.options.namespaces import JOB_MODEL, VALUE_CHUNKS

    store, argv = job
    ssps = [SystemStreamPartition("kafka", f"topic-{t:03d}", p) for t in range(100) for p in range(100)]
    JobModelStore(store).write(GroupByPartitionFixedTasks().group(None, ssps))
    code, out = run(argv, capsys)
    assert code == 0 and out["damaged"] == []
    for key in store.list(VALUE_CHUNKS):
        store.delete(VALUE_CHUNKS, key)
    code, out = run(argv, capsys)
    [finding] = out["damaged"]
    assert code == 1 and finding["namespace"] == JOB_MODEL and finding["verdict"] == Verdict.FAIL.value
    assert "is missing" in finding["problem"]
