"""samza-source: argument parsing and validation (exit 2 naming the flag), rendering, timestamps, in-process runs
against ``memory:`` stores and fabricated checkpoint locations, and secrets kept out of every output."""

from __future__ import annotations

import argparse
import json
import uuid

import pytest

from spark_samza_source.core.checkpoint import Checkpoint, CheckpointMirror
from spark_samza_source.core.errors import InternalError, MetadataStoreError
from spark_samza_source.core.jobmodel import JobModel
from spark_samza_source.core.model import SystemStream, SystemStreamPartition, TaskName
from spark_samza_source.core.startpoint import StartpointOldest, StartpointSpecific, StartpointUpcoming
from spark_samza_source.core.startpoint_manager import StartpointManager
from spark_samza_source.kafka.driver.offset import KafkaOffset
from spark_samza_source.kinesis.driver.mapper import ShardPartitionMapper
from spark_samza_source.kinesis.driver.offset import DRAINED, READABLE, KinesisOffset, ShardState
from spark_samza_source.kinesis.positions import ShardPosition
from spark_samza_source.metadata import open_store
from spark_samza_source.ops import cli
from spark_samza_source.ops.cli.commands import common as command_common
from spark_samza_source.ops.cli.parser import STORE_ENV, build_parser, parse_timestamp
from spark_samza_source.ops.cli.render import iso_ms, render_table
from spark_samza_source.ops.lag import (
    ShardBacklog,
    kafka_lag,
    kinesis_lag,
    measure_shard_backlog,
    slot_mapping_matches,
)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def store_uri():
    return f"memory:cli-{uuid.uuid4().hex[:8]}"


@pytest.fixture(autouse=True)
def _no_store_env(monkeypatch):
    monkeypatch.delenv(STORE_ENV, raising=False)


def ssp(topic: str, p: int, system: str = "kafka") -> SystemStreamPartition:
    return SystemStreamPartition(system, topic, p)


# ---- timestamps ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, expected", [
    ("1700000000000", 1_700_000_000_000),
    ("2023-11-14T22:13:20Z", 1_700_000_000_000),
    ("2023-11-14T22:13:20z", 1_700_000_000_000),
    ("2023-11-14T23:13:20+01:00", 1_700_000_000_000),
    ("2023-11-14 22:13:20.250Z", 1_700_000_000_250),
    ("2023-11-14T22:13:20.999999Z", 1_700_000_001_000),
    ("  1700000000001 ", 1_700_000_000_001),
])
def test_timestamps_accepted(text, expected):
    assert parse_timestamp(text) == expected


@pytest.mark.parametrize("text, message", [
    ("2023-11-14T22:13:20", "no time zone"),
    ("2023-11-14", "no time zone"),
    ("1700000000", "looks like epoch seconds"),
    ("yesterday", "neither epoch milliseconds nor an ISO-8601"),
    ("", "empty timestamp"),
    ("-5", "neither epoch"),
    ("1960-01-01T00:00:00Z", "before 1970"),
    ("99999999999999999999", "larger than a Java long"),
])
def test_timestamps_refused(text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        parse_timestamp(text)


# ---- rendering -----------------------------------------------------------------------------------------------


def test_table_aligns_numbers_right_and_text_left():
    table = render_table(["SSP", "BEHIND", "NOTE"], [["kafka.t.0", 5, None], ["kafka.longer.10", 1234, "x"]])
    lines = table.splitlines()
    assert lines[0] == "SSP              BEHIND  NOTE"
    assert lines[1] == "---------------  ------  ----"
    assert lines[2] == "kafka.t.0             5  -"
    assert lines[3] == "kafka.longer.10    1234  x"
    assert all(line == line.rstrip() for line in lines)


def test_table_mixed_column_is_left_aligned_and_containers_are_json():
    table = render_table(["A", "B"], [[1, {"b": 1, "a": [2]}], ["x", True]])
    assert table.splitlines()[2] == '1  {"a":[2],"b":1}'
    assert table.splitlines()[3] == "x  yes"


def test_table_rejects_ragged_rows():
    with pytest.raises(InternalError, match="2 cells, expected 3"):
        render_table(["A", "B", "C"], [[1, 2]])


def test_iso_ms():
    assert iso_ms(1_700_000_000_007) == "2023-11-14T22:13:20.007Z"
    assert iso_ms(None) == "-"


# ---- usage errors: exit 2, usage, the flag named -------------------------------------------------------------


BASE = ["--store", "memory:x", "--job", "j"]


@pytest.mark.parametrize("argv, flag", [
    (["startpoint", "set", *BASE, "--topic", "t", "--offset", "3"], "--topic needs --partition"),
    (["startpoint", "set", *BASE, "--partition", "1", "--offset", "3"], "--partition needs --topic"),
    (["startpoint", "set", *BASE, "--topic", "t", "--partition", "1"], "--offset/--sequence --timestamp"),
    (["startpoint", "set", *BASE, "--topic", "t", "--partition", "1", "--offset", "3", "--oldest"],
     "--oldest: not allowed with argument --offset/--sequence"),
    (["startpoint", "set", *BASE, "--topic", "t", "--partition", "-1", "--oldest"], "--partition"),
    (["startpoint", "set", *BASE, "--topic", "t", "--partition", "x", "--oldest"], "--partition"),
    (["startpoint", "set", *BASE, "--topic", "t", "--partition", "1", "--offset", "4x"], "--offset/--sequence"),
    (["startpoint", "set", *BASE, "--topic", "t", "--partition", "1", "--timestamp", "1700000000"],
     "argument --timestamp: 1700000000 looks like epoch seconds"),
    (["startpoint", "set", *BASE, "--topic", "t", "--partition", "1", "--stream", "s", "--slot", "0",
      "--oldest"], "either --topic/--partition (Kafka) or --stream"),
    (["startpoint", "set", *BASE, "--stream", "s", "--shard", "shardId-0", "--oldest"],
     "--shard needs --checkpoint"),
    (["startpoint", "set", *BASE, "--stream", "s", "--oldest"],
     "--stream without --shard or --slot (a startpoint for every slot of the stream) needs --checkpoint DIR"),
    (["startpoint", "set", *BASE, "--stream", "s", "--checkpoint", "/x", "--sequence", "4"],
     "--stream needs --shard ID or --slot N with --offset/--sequence"),
    (["startpoint", "set", *BASE, "--topic", "t", "--oldest", "--task", "Partition 0"],
     "--topic needs --partition with --task"),
    (["startpoint", "get", *BASE, "--topic", "t"], "--topic needs --partition"),
    (["startpoint", "delete", *BASE, "--stream", "s"], "exactly one of --shard ID or --slot N"),
    (["startpoint", "set", *BASE, "--stream", "s", "--shard", "a", "--slot", "1", "--oldest"],
     "exactly one of --shard ID or --slot N"),
    (["startpoint", "get", *BASE, "--slot", "1"], "--shard/--slot need --stream"),
    (["startpoint", "get", *BASE], "name the partition"),
    (["startpoint", "delete", *BASE, "--topic", "t", "--partition", "1", "--checkpoint", "/x"],
     "--checkpoint is only used with --stream --shard"),
    (["startpoint", "list", "--job", "j"], "--store is required"),
    (["startpoint", "list", "--store", "memory:x"], "the following arguments are required: --job"),
    (["startpoint", "list", "--store", "bogus://h/x", "--job", "j"], "unknown scheme 'bogus'"),
    (["startpoint", "list", "--store", "memory:x", "--job", "no/slashes"], "job"),
    (["lag", *BASE], "exactly one of --bootstrap HOST:PORT (Kafka) or --stream S"),
    (["lag", *BASE, "--bootstrap", "h:1", "--stream", "s"], "exactly one of --bootstrap"),
    (["lag", *BASE, "--bootstrap", "h:1", "--region", "eu-west-1"], "--region is for Kinesis"),
    (["lag", *BASE, "--bootstrap", "h:1", "--checkpoint", "/x"], "--checkpoint is for Kinesis"),
    (["lag", *BASE, "--stream", "s", "-X", "a=b"], "-X/--kafka-property is for Kafka"),
    (["lag", *BASE, "--bootstrap", "h:1", "-X", "novalue"], "KEY=VALUE"),
    (["lag", *BASE, "--stream", "s", "--max-records", "0"], "--max-records must be a positive integer"),
    (["jobmodel", "show", *BASE, "--topic", "t"], "unrecognized arguments: --topic"),
    (["startpoint", "frobnicate", *BASE], "invalid choice: 'frobnicate'"),
    ([], "required: COMMAND"),
])
def test_usage_errors_exit_2_with_usage_naming_the_problem(capsys, argv, flag):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert "usage: samza-source" in err
    assert flag in err
    assert out == ""


def test_usage_error_with_json_also_prints_a_json_error(capsys):
    code, out, err = run(capsys, "startpoint", "set", *BASE, "--topic", "t", "--offset", "3", "--json")
    assert code == 2
    payload = json.loads(out)
    assert payload["exitCode"] == 2 and "--topic needs --partition" in payload["error"]
    assert "usage:" in err


def test_an_error_is_printed_with_its_condition_first(capsys, store_uri):
    code, out, err = run(capsys, "startpoint", "get", "--store", store_uri, "--job", "j")
    assert code == 2 and "samza-source startpoint get: error: [SAMZA_CLI_SELECTOR_INVALID] name the partition" in err
    code, out, err = run(capsys, "checkpoint", "show", "--store", store_uri, "--job", "j")
    assert code == 1 and out == ""
    assert err.startswith("samza-source: error: [SAMZA_CLI_NO_COMMITTED_POSITIONS] no committed positions mirrored")
    code, out, err = run(capsys, "startpoint", "list", "--store", "bogus://h/x", "--job", "j")
    assert code == 2 and "error: [SAMZA_INVALID_OPTION] metadata.store 'bogus://h/x'" in err  # the store's own


def test_parser_accepts_sequence_as_an_alias_and_normalises_positions():
    args = build_parser().parse_args(["startpoint", "set", *BASE, "--stream", "s", "--slot", "2",
                                      "--sequence", "000495"])
    assert args.specific == "495" and args.slot == 2 and args.group == "startpoint" and args.command == "set"


def test_store_from_the_environment(capsys, monkeypatch, store_uri):
    monkeypatch.setenv(STORE_ENV, store_uri)
    code, out, _ = run(capsys, "startpoint", "list", "--job", "j", "--json")
    assert code == 0 and json.loads(out)["store"] == store_uri


def test_help_exits_0(capsys):
    code, out, _ = run(capsys, "lag", "--help")
    assert code == 0 and "--bootstrap" in out and "exit status: 0 ok, 1 failed" in out


# ---- startpoints in process ----------------------------------------------------------------------------------


def test_startpoint_set_get_list_delete_round_trip(capsys, store_uri):
    job = ["--store", store_uri, "--job", "orders"]
    code, out, err = run(capsys, "startpoint", "set", *job, "--topic", "orders", "--partition", "3",
                         "--timestamp", "2023-11-14T22:13:20Z", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["key"] == "kafka.orders.3" and data["task"] is None
    assert data["startpoint"]["@type"] == "StartpointTimestamp"
    assert data["startpoint"]["timestampOffset"] == 1_700_000_000_000
    assert "nothing is stored yet" in err  # no job model or checkpoint under that job: a typo warning

    manager = StartpointManager(open_store(store_uri, "orders"))
    stored = manager.read(ssp("orders", 3))
    assert stored.timestamp_ms == 1_700_000_000_000

    code, _, _ = run(capsys, "startpoint", "set", *job, "--topic", "orders", "--partition", "3", "--offset", "42",
                     "--task", "Partition 3")
    assert code == 0
    assert manager.read(ssp("orders", 3), "Partition 3") == StartpointSpecific(
        "42", creation_timestamp=manager.read(ssp("orders", 3), "Partition 3").creation_timestamp)

    code, out, _ = run(capsys, "startpoint", "list", *job)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["SSP", "TASK", "TYPE", "VALUE", "CREATED", "STATE"]
    assert lines[2].split()[:4] == ["kafka.orders.3", "-", "StartpointTimestamp", "2023-11-14T22:13:20.000Z"]
    assert lines[3].split()[:5] == ["kafka.orders.3", "Partition", "3", "StartpointSpecific", "42"]

    code, out, _ = run(capsys, "startpoint", "get", *job, "--topic", "orders", "--partition", "3", "--task",
                       "Partition 3", "--json")
    assert code == 0
    got = json.loads(out)["startpoints"]
    assert [(g["key"], g["type"], g["value"]) for g in got] == [
        ("kafka.orders.3.Partition 3", "StartpointSpecific", "42")]

    code, out, _ = run(capsys, "startpoint", "delete", *job, "--topic", "orders", "--partition", "3", "--json")
    assert code == 0
    assert json.loads(out)["deleted"] == ["kafka.orders.3", "kafka.orders.3.Partition 3"]
    assert manager.list() == []

    code, out, err = run(capsys, "startpoint", "get", *job, "--topic", "orders", "--partition", "3")
    assert code == 1 and out == "" and "no startpoint stored for SystemStreamPartition [kafka, orders, 3]" in err
    code, out, _ = run(capsys, "startpoint", "delete", *job, "--topic", "orders", "--partition", "3", "--json")
    assert code == 0 and json.loads(out)["deleted"] == []


def test_startpoint_set_warns_when_the_ssp_or_task_is_not_in_the_job_model(capsys, store_uri):
    store = open_store(store_uri, "orders")
    model = JobModel({TaskName("Partition 0"): {ssp("orders", 0)}, TaskName("Partition 1"): {ssp("orders", 1)}},
                     {SystemStream("kafka", "orders"): 2})
    store.put("jobmodel", "current", model.to_json())
    job = ["--store", store_uri, "--job", "orders"]
    code, _, err = run(capsys, "startpoint", "set", *job, "--topic", "orders", "--partition", "7", "--oldest")
    assert code == 0 and "SystemStreamPartition [kafka, orders, 7] is not in the job's current job model" in err
    code, _, err = run(capsys, "startpoint", "set", *job, "--topic", "orders", "--partition", "1", "--oldest",
                       "--task", "Partition 0")
    assert code == 0 and "task Partition 0 does not hold" in err and "held by Partition 1" in err
    code, _, err = run(capsys, "startpoint", "set", *job, "--topic", "orders", "--partition", "1", "--oldest")
    assert code == 0 and err == ""


def test_malformed_startpoints_are_listed_not_fatal(capsys, store_uri):
    store = open_store(store_uri, "j")
    store.put("startpoint", "kafka.t.0", {"@type": "StartpointNope", "creationTimestamp": 1})
    StartpointManager(store).write(ssp("t", 1), StartpointOldest())
    code, out, _ = run(capsys, "startpoint", "list", "--store", store_uri, "--job", "j", "--json")
    assert code == 0
    data = json.loads(out)
    assert [e["key"] for e in data["startpoints"]] == ["kafka.t.1"]
    assert [m["key"] for m in data["malformed"]] == ["kafka.t.0"] and "StartpointNope" in data["malformed"][0]["error"]


# ---- secrets -------------------------------------------------------------------------------------------------

SECRET_URI = "s3://AKIAEXAMPLEKEY:wJalrXUtnFEMI%2FK7MDENG@bucket/prefix?session_token=tok-SECRET-123"


def test_store_credentials_never_printed(capsys, monkeypatch, store_uri):
    opened = []

    def fake_open(uri, job):
        opened.append(uri)
        return open_store(store_uri, job)

    monkeypatch.setattr(command_common, "open_store", fake_open)
    for argv in (["startpoint", "set", "--topic", "t", "--partition", "0", "--oldest"],
                 ["startpoint", "list"], ["startpoint", "list", "--json"], ["checkpoint", "show"],
                 ["jobmodel", "show", "--json"]):
        code, out, err = run(capsys, *argv, "--store", SECRET_URI, "--job", "j")
        assert opened[-1] == SECRET_URI  # the command really used the URI ...
        for secret in ("AKIAEXAMPLEKEY", "wJalrXUtnFEMI", "tok-SECRET-123"):
            assert secret not in out and secret not in err  # ... and never showed its credentials
    code, out, err = run(capsys, "startpoint", "list", "--store", SECRET_URI, "--job", "j", "--json")
    assert json.loads(out)["store"] == "s3://***@bucket/prefix?session_token=***"


def test_secrets_in_errors_and_kafka_properties_are_scrubbed(capsys, monkeypatch, store_uri):
    def failing_open(uri, job):
        raise MetadataStoreError(f"cannot reach {uri}: access denied for key AKIAEXAMPLEKEY")

    monkeypatch.setattr(command_common, "open_store", failing_open)
    code, out, err = run(capsys, "checkpoint", "show", "--store", SECRET_URI, "--job", "j", "--json")
    assert code == 1
    assert "AKIAEXAMPLEKEY" not in out + err and "tok-SECRET-123" not in out + err
    assert json.loads(out)["exitCode"] == 1 and "access denied" in json.loads(out)["error"]

    monkeypatch.setattr(command_common, "open_store", lambda uri, job: open_store(store_uri, job))
    CheckpointMirror(open_store(store_uri, "j")).write(Checkpoint({TaskName("Partition 0"): {ssp("t", 0): 5}}))
    code, out, err = run(capsys, "lag", "--store", store_uri, "--job", "j", "--bootstrap", "127.0.0.1:1",
                         "-X", "sasl.password=hunter2-secret", "-X", "socket.timeout.ms=300",
                         "-X", "socket.connection.setup.timeout.ms=300", "--timeout", "5")
    assert code == 1  # nothing listens on port 1
    assert "hunter2-secret" not in out + err


def test_only_secret_looking_properties_are_scrubbed():
    scrub = cli._Scrubber(["s3://AK:SECRETVALUE@b/p", None], [("sasl.password", "pw-123"), ("acks", "all"),
                                                              ("socket.timeout.ms", "300")])
    text = "offset 300 acks all pw-123 s3://AK:SECRETVALUE@b/p SECRETVALUE"
    assert scrub(text) == "offset 300 acks all *** s3://***@b/p ***"


# ---- job model, checkpoint, lag in process -------------------------------------------------------------------


def _model(partitions: int) -> JobModel:
    return JobModel({TaskName(f"Partition {t}"): {ssp("orders", p) for p in range(partitions) if p % 2 == t}
                     for t in range(2)}, {SystemStream("kafka", "orders"): 2})


def test_jobmodel_show_from_the_store_reports_the_expansion(capsys, store_uri):
    store = open_store(store_uri, "j")
    store.put("jobmodel", "previous", _model(2).to_json())
    store.put("jobmodel", "current", _model(4).to_json())
    code, out, _ = run(capsys, "jobmodel", "show", "--store", store_uri, "--job", "j")
    assert code == 0
    rows = [line.split() for line in out.splitlines()[3:7]]
    assert rows == [["Partition", "0", "kafka.orders.0"], ["Partition", "0", "kafka.orders.2", "new"],
                    ["Partition", "1", "kafka.orders.1"], ["Partition", "1", "kafka.orders.3", "new"]]
    assert "initial partition counts: kafka.orders=2" in out
    assert "  SystemStreamPartition [kafka, orders, 2] -> Partition 0 (new)" in out
    code, out, _ = run(capsys, "jobmodel", "show", "--store", store_uri, "--job", "j", "--json")
    data = json.loads(out)
    assert data["tasks"] == {"Partition 0": ["kafka.orders.0", "kafka.orders.2"],
                             "Partition 1": ["kafka.orders.1", "kafka.orders.3"]}
    assert data["changes"]["newSsps"] == [{"ssp": "kafka.orders.2", "task": "Partition 0"},
                                          {"ssp": "kafka.orders.3", "task": "Partition 1"}]
    assert data["previous"] is True and data["initialPartitionCounts"] == {"kafka.orders": 2}


def test_jobmodel_show_without_a_job_model_fails_with_a_hint(capsys, store_uri):
    code, out, err = run(capsys, "jobmodel", "show", "--store", store_uri, "--job", "j")
    assert code == 1 and out == "" and "pass --checkpoint DIR" in err


def write_offset_log(root, offsets: list[str]) -> str:
    (root / "offsets").mkdir(parents=True)
    for batch, line in enumerate(offsets):
        (root / "offsets" / str(batch)).write_text(f'v1\n{{"batchWatermarkMs":0}}\n{line}')
    return str(root)


def test_jobmodel_show_from_a_kafka_checkpoint_finds_the_previous_model(capsys, tmp_path, store_uri):
    def offset(n):
        model = _model(n)
        return KafkaOffset(model, {(t, s): 0 for t, ssps in model.tasks.items() for s in ssps}).to_json_str()

    location = write_offset_log(tmp_path / "cp", [offset(2), offset(2), offset(4), offset(4)])
    code, out, _ = run(capsys, "jobmodel", "show", "--store", store_uri, "--job", "j", "--checkpoint", location,
                       "--json")
    assert code == 0
    data = json.loads(out)
    assert data["source"].endswith("Spark batch 3")
    assert [c["ssp"] for c in data["changes"]["newSsps"]] == ["kafka.orders.2", "kafka.orders.3"]


def kinesis_offset(batch: int = 4) -> KinesisOffset:
    mapper = ShardPartitionMapper(2, 2, {"shardId-000000000001": 0, "shardId-000000000002": 2,
                                         "shardId-000000000003": 2})
    shards = {
        "shardId-000000000000": ShardState(ShardPosition.shard_end(), DRAINED, "99"),
        "shardId-000000000001": ShardState(ShardPosition.after_sequence("10"), READABLE),
        "shardId-000000000002": ShardState(ShardPosition.after_sequence("20"), READABLE),
        "shardId-000000000003": ShardState(ShardPosition.trim_horizon(), READABLE),
    }
    return KinesisOffset(batch=batch, stream="clicks", mapper=mapper, shards=shards, query_id="q1")


def test_kinesis_shard_resolves_to_its_slot_through_the_checkpoint(capsys, tmp_path, store_uri):
    location = write_offset_log(tmp_path / "cp", ["-", kinesis_offset(3).to_json_str(),
                                                  kinesis_offset(4).to_json_str()])
    job = ["--store", store_uri, "--job", "j"]
    code, out, err = run(capsys, "startpoint", "set", *job, "--stream", "clicks", "--shard", "shardId-000000000001",
                         "--checkpoint", location, "--sequence", "12", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["sspKey"] == "kinesis.clicks.0" and data["shardTask"] == "Task-0" and data["sparkBatch"] == 2
    stored = StartpointManager(open_store(store_uri, "j")).read(ssp("clicks", 0, "kinesis"))
    assert stored.position == "12"

    # an overloaded slot: a sequence number cannot position two shards
    code, out, err = run(capsys, "startpoint", "set", *job, "--stream", "clicks", "--shard", "shardId-000000000003",
                         "--checkpoint", location, "--sequence", "12")
    assert code == 1 and "overloaded slot" in err
    code, out, err = run(capsys, "startpoint", "set", *job, "--stream", "clicks", "--shard", "shardId-000000000003",
                         "--checkpoint", location, "--oldest")
    assert code == 0 and "applies to all of them" in err
    # a drained shard has no slot; a wrong task is refused
    code, _, err = run(capsys, "startpoint", "set", *job, "--stream", "clicks", "--shard", "shardId-000000000000",
                       "--checkpoint", location, "--oldest")
    assert code == 1 and "is drained" in err
    code, _, err = run(capsys, "startpoint", "set", *job, "--stream", "clicks", "--shard", "shardId-000000000001",
                       "--checkpoint", location, "--oldest", "--task", "Task-1")
    assert code == 1 and "is in task Task-0" in err
    code, _, err = run(capsys, "startpoint", "set", *job, "--stream", "other", "--shard", "shardId-000000000001",
                       "--checkpoint", location, "--oldest")
    assert code == 1 and "no offset of the expected source" in err
    code, _, err = run(capsys, "startpoint", "set", *job, "--stream", "clicks", "--shard", "shardId-000000000001",
                       "--checkpoint", str(tmp_path / "nowhere"), "--oldest")
    assert code == 1 and "no offsets/ directory" in err


def test_jobmodel_show_from_a_kinesis_checkpoint_lists_shards_per_slot(capsys, tmp_path, store_uri):
    location = write_offset_log(tmp_path / "cp", [kinesis_offset().to_json_str()])
    code, out, _ = run(capsys, "jobmodel", "show", "--store", store_uri, "--job", "j", "--checkpoint", location)
    assert code == 0
    assert out.splitlines()[1].split() == ["TASK", "SSP", "SHARDS", "CHANGE"]
    assert ["Task-1", "kinesis.clicks.2", "shardId-000000000002,", "shardId-000000000003"] in [
        line.split() for line in out.splitlines()]
    assert "previous job model: none recorded" in out


def test_checkpoint_show(capsys, store_uri):
    mirror = CheckpointMirror(open_store(store_uri, "j"))
    mirror.write(Checkpoint({TaskName("Partition 0"): {ssp("t", 0): 17, ssp("t", 2): 3},
                             TaskName("Task-0"): {ssp("c", 0, "kinesis"): {"type": "AFTER_SEQUENCE_NUMBER",
                                                                           "sequence": "44", "sub": -1}}},
                            batch_id=9, timestamp_ms=1_700_000_000_000))
    code, out, _ = run(capsys, "checkpoint", "show", "--store", store_uri, "--job", "j")
    assert code == 0
    assert out.splitlines()[0] == "committed positions of job 'j' (batch 9, committed at 2023-11-14T22:13:20.000Z)"
    rows = [line.split(None, 2) for line in out.splitlines()[3:]]
    assert ["Task-0", "kinesis.c.0", "after 44"] in [[r[0], r[1], r[2]] for r in rows if r[0] == "Task-0"]
    assert any(line.split()[-2:] == ["kafka.t.2", "3"] for line in out.splitlines())
    code, out, _ = run(capsys, "checkpoint", "show", "--store", store_uri, "--job", "j", "--json")
    assert json.loads(out)["checkpoint"]["tasks"]["Partition 0"][0]["position"] == 17


def test_kafka_lag_arithmetic():
    checkpoint = Checkpoint({
        TaskName("Partition 0"): {ssp("t", 0): 10, ssp("conf", 0): 4},
        TaskName("Partition 1"): {ssp("t", 1): 5, ssp("conf", 0): 2},
        TaskName("Partition 2"): {ssp("gone", 0): 1},
    })
    report = kafka_lag(checkpoint, {("t", 0): (0, 30), ("t", 1): (7, 5), ("conf", 0): (0, 9)})
    by = {r.ssp.key: r for r in report.rows}
    assert (by["kafka.conf.0"].committed, by["kafka.conf.0"].behind) == (2, 7)  # broadcast: the lowest task
    assert by["kafka.conf.0"].tasks == ("Partition 0", "Partition 1")
    assert (by["kafka.t.0"].latest, by["kafka.t.0"].behind) == (30, 20)
    assert by["kafka.t.1"].behind == 0 and "below the log start (7)" in by["kafka.t.1"].note
    assert by["kafka.gone.0"].behind is None and not report.complete
    totals = report.totals()
    assert (totals["behind"], totals["maxBehind"], totals["maxBehindAt"], totals["measured"]) == (
        27, 20, "kafka.t.0", 3)

    # a partition of the current job model with nothing committed yet (the topic just grew) counts from its start
    grown = JobModel({TaskName("Partition 0"): {ssp("t", 0), ssp("t", 2)}, TaskName("Partition 1"): {ssp("t", 1)}})
    report = kafka_lag(checkpoint, {("t", 0): (0, 30), ("t", 1): (7, 5), ("conf", 0): (0, 9), ("t", 2): (3, 11)},
                       grown)
    new = {r.ssp.key: r for r in report.rows}["kafka.t.2"]
    assert (new.committed, new.latest, new.behind, new.tasks) == (None, 11, 8, ("Partition 0",))
    assert "nothing committed yet" in new.note
    assert [r.ssp.key for r in report.rows] == sorted(r.ssp.key for r in report.rows)


def test_kinesis_lag_maps_one_shard_slots_through_the_offset():
    pos = {"type": "AFTER_SEQUENCE_NUMBER", "sequence": "10", "sub": -1}
    checkpoint = Checkpoint({
        TaskName("Task-0"): {ssp("clicks", 0, "kinesis"): pos},
        TaskName("Task-1"): {ssp("clicks", 2, "kinesis"): {"shardId-000000000002": pos,
                                                           "shardId-000000000003": {"type": "SHARD_END"}}},
    }, batch_id=4)
    seen = []

    def measure(shard, position):
        seen.append((shard, str(position)))
        return ShardBacklog(7 if shard.endswith("1") else 0, "77", 1500, capped=shard.endswith("2"))

    offset = kinesis_offset()
    report = kinesis_lag(checkpoint, "clicks", measure, lambda t, s: offset.shards_in_slot(t, s))
    assert [(r.shard, r.behind, r.capped) for r in report.rows] == [
        ("shardId-000000000001", 7, False), ("shardId-000000000002", 0, True), ("shardId-000000000003", 0, False)]
    assert seen[0] == ("shardId-000000000001", "after 10")
    assert report.totals()["capped"] is True and report.totals()["maxMillisBehindLatest"] == 1500

    assert slot_mapping_matches(checkpoint, "clicks", offset.shards_in_slot)
    one_shard_view = Checkpoint({TaskName("Task-1"): {ssp("clicks", 2, "kinesis"): pos}})
    assert not slot_mapping_matches(one_shard_view, "clicks", offset.shards_in_slot)  # slot 2 holds two shards
    assert slot_mapping_matches(one_shard_view, "other", offset.shards_in_slot)  # another stream: nothing to map

    unmapped = kinesis_lag(checkpoint, "clicks", measure, None)
    assert unmapped.rows[0].shard is None and "pass --checkpoint DIR" in unmapped.rows[0].note
    assert not unmapped.complete


def test_a_refused_get_records_is_a_kinesis_error_with_the_lag_condition():
    from botocore.exceptions import ClientError

    from spark_samza_source.kinesis.errors import KinesisSourceError

    class RefusingAdmin:
        client = type("Client", (), {"get_records": None})()

        def shard_iterator(self, stream, shard_id, position):
            return "iterator"

        def call(self, what, fn, **kwargs):
            raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "GetRecords")

        def where(self):
            return "region eu-west-1"

        def _scrub(self, err):
            return str(err)

    position = ShardPosition.from_json({"type": "AFTER_SEQUENCE_NUMBER", "sequence": "10", "sub": -1})
    with pytest.raises(KinesisSourceError) as err:
        measure_shard_backlog(RefusingAdmin(), "clicks", "shardId-1", position, sleep=lambda _: None)
    assert str(err.value).startswith("[SAMZA_LAG_READ_FAILED] GetRecords of shard shardId-1 of stream 'clicks' "
                                     "failed (region eu-west-1): ")
    assert "AccessDeniedException" in str(err.value)


# ---- startpoint set for every partition of a topic, every slot of a stream ----------------------------------------


def test_startpoint_set_for_a_whole_topic_writes_one_per_partition_of_the_job_model(capsys, store_uri):
    store = open_store(store_uri, "orders")
    model = JobModel({TaskName("Partition 0"): {ssp("orders", 0), ssp("orders", 2)},
                      TaskName("Partition 1"): {ssp("orders", 1), ssp("payments", 1)}},
                     {SystemStream("kafka", "orders"): 3, SystemStream("kafka", "payments"): 2})
    store.put("jobmodel", "current", model.to_json())
    job = ["--store", store_uri, "--job", "orders"]
    code, out, err = run(capsys, "startpoint", "set", *job, "--topic", "orders", "--timestamp",
                         "2023-11-14T22:13:20Z", "--json")
    assert code == 0, err
    assert json.loads(out)["keys"] == ["kafka.orders.0", "kafka.orders.1", "kafka.orders.2"]
    manager = StartpointManager(store)
    assert sorted(e.key for e in manager.list()) == ["kafka.orders.0", "kafka.orders.1", "kafka.orders.2"]
    assert all(manager.read(ssp("orders", p)).timestamp_ms == 1_700_000_000_000 for p in range(3))
    assert manager.read(ssp("payments", 1)) is None  # only the topic named

    code, out, _ = run(capsys, "startpoint", "set", *job, "--topic", "payments", "--oldest")
    assert code == 0 and "every partition of topic 'payments' (1)" in out and "'kafka.payments.1'" in out


def test_startpoint_set_for_a_whole_topic_needs_a_job_model_that_holds_it(capsys, store_uri):
    job = ["--store", store_uri, "--job", "orders"]
    code, _, err = run(capsys, "startpoint", "set", *job, "--topic", "orders", "--oldest")
    assert code == 1 and "no job model is stored" in err and "give --partition P" in err
    store = open_store(store_uri, "orders")
    store.put("jobmodel", "current", JobModel({TaskName("Partition 0"): {ssp("orders", 0)}},
                                              {SystemStream("kafka", "orders"): 1}).to_json())
    code, _, err = run(capsys, "startpoint", "set", *job, "--topic", "order", "--oldest")
    assert code == 1 and "topic 'order' is not in the current job model" in err and "its topics: orders" in err
    assert StartpointManager(store).list() == []


def test_startpoint_set_for_a_whole_stream_writes_one_per_slot_holding_shards(capsys, tmp_path, store_uri):
    location = write_offset_log(tmp_path / "cp", [kinesis_offset(4).to_json_str()])
    job = ["--store", store_uri, "--job", "j"]
    code, out, err = run(capsys, "startpoint", "set", *job, "--stream", "clicks", "--checkpoint", location,
                         "--upcoming", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["keys"] == ["kinesis.clicks.0", "kinesis.clicks.2"]  # slots 1 and 3 hold no shard
    assert [s["shardsInSlot"] for s in data["ssps"]] == [["shardId-000000000001"],
                                                         ["shardId-000000000002", "shardId-000000000003"]]
    manager = StartpointManager(open_store(store_uri, "j"))
    assert sorted(e.key for e in manager.list()) == ["kinesis.clicks.0", "kinesis.clicks.2"]
    assert isinstance(manager.read(ssp("clicks", 2, "kinesis")), StartpointUpcoming)


# ---- a startpoint the job can never apply: the same words for both systems -----------------------------------
NOT_IN_MODEL = "is not in the job's current job model: the startpoint is kept until a job model holds it"


def test_kinesis_slot_startpoints_are_checked_against_the_job_as_kafka_partitions_are(capsys, tmp_path, store_uri):
    """Backs Guarantees (docs/guarantees.md, mistakes caught where they are made): a startpoint for a Kinesis slot or
    stream the job does not read is stored with the warning a Kafka partition outside the job model gets."""
    job = ["--store", store_uri, "--job", "j"]
    code, _, err = run(capsys, "startpoint", "set", *job, "--stream", "clicks", "--slot", "1", "--oldest")
    assert code == 0 and "nothing is stored yet" in err  # no mirror, no --checkpoint: a typo in --store or --job?
    location = write_offset_log(tmp_path / "cp", [kinesis_offset().to_json_str()])
    with_checkpoint = ["--checkpoint", location, "--oldest"]
    code, _, err = run(capsys, "startpoint", "set", *job, "--stream", "clicks", "--slot", "2", *with_checkpoint)
    assert code == 0 and err == ""  # slot 2 of 4 (2 tasks x 2 slots): read by the job
    code, _, err = run(capsys, "startpoint", "set", *job, "--stream", "clicks", "--slot", "9", *with_checkpoint)
    assert code == 0 and f"SystemStreamPartition [kinesis, clicks, 9] {NOT_IN_MODEL}" in err
    code, _, err = run(capsys, "startpoint", "set", *job, "--stream", "clicks", "--slot", "2", "--task", "Task-0",
                       *with_checkpoint)
    assert code == 0 and "task Task-0 does not hold SystemStreamPartition [kinesis, clicks, 2]" in err
    # no --checkpoint: the checkpoint mirror says which slots of which streams the job reads
    CheckpointMirror(open_store(store_uri, "j")).write(
        Checkpoint({TaskName("Task-0"): {ssp("clicks", 0, "kinesis"): {"type": "TRIM_HORIZON"}}}))
    code, _, err = run(capsys, "startpoint", "set", *job, "--stream", "views", "--slot", "0", "--oldest")
    assert code == 0 and f"SystemStreamPartition [kinesis, views, 0] {NOT_IN_MODEL}" in err
    code, _, err = run(capsys, "startpoint", "set", *job, "--topic", "views", "--partition", "0", "--oldest")
    assert code == 0 and f"SystemStreamPartition [kafka, views, 0] {NOT_IN_MODEL}" in err  # the same words
