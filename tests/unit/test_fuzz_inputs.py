"""Bad input, fuzzed: everything a user or a damaged store can hand us raises only our own errors.

Option maps of both sources (the real keys with random values, plus random keys), startpoint JSON, stored
checkpoints and job models, Spark offsets of both sources (arbitrary JSON, and valid documents with random damage
at a random place), the driver lease record, and Samza ``job.properties`` text and mappings. Each parser must
either succeed or raise a :class:`SamzaSourceError` subclass: a bare KeyError / TypeError / AttributeError /
ValueError / IndexError ... escaping is a bug. Values that parse must also survive their own round trip.
"""

from __future__ import annotations

import copy
import functools
import json
import uuid

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from spark_samza_source.core.checkpoint import Checkpoint, CheckpointMirror
from spark_samza_source.core.errors import JobLeaseError, SamzaSourceError
from spark_samza_source.core.jobmodel import JobModel
from spark_samza_source.core.model import SystemStream, SystemStreamPartition, TaskName, parse_ssp_key
from spark_samza_source.core.startpoint import (
    Startpoint,
    StartpointOldest,
    StartpointSpecific,
    StartpointTimestamp,
    StartpointUpcoming,
)
from spark_samza_source.core.startpoint_manager import StartpointManager
from spark_samza_source.kafka.driver.offset import KafkaOffset, Rebase
from spark_samza_source.kafka.options import KafkaSourceOptions
from spark_samza_source.kinesis.driver.mapper import ShardPartitionMapper
from spark_samza_source.kinesis.driver.offset import DRAINED, READABLE, AppliedStartpoint, KinesisOffset, ShardState
from spark_samza_source.kinesis.options import KinesisSourceOptions
from spark_samza_source.kinesis.positions import ShardPosition
from spark_samza_source.metadata import open_store
from spark_samza_source.metadata.lease import KEY, NAMESPACE, JobLease
from spark_samza_source.samza_config import import_mapping, parse_properties, starting_offsets_from_samza_checkpoint

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


#: [accepted, tried] of the fuzz test running now: every ``only_our_errors`` call (and ``tally``) counts
TALLY = [0, 0]


def tally(accepted: bool) -> None:
    TALLY[0] += bool(accepted)
    TALLY[1] += 1


def only_our_errors(parse, value):
    """``parse(value)``; returns the result, or None when it raised one of our errors (anything else fails)."""
    try:
        result = parse(value)
    except SamzaSourceError:
        tally(False)
        return None
    tally(True)
    return result


def accepts_a_fair_share(minimum: float):
    """Around a ``@given`` test: after Hypothesis ran it, at least ``minimum`` of the inputs it parsed must have been
    accepted -- a fuzzer whose every input is refused passes vacuously, and so would an over-strict parser.

    The floors sit far below the shares seen (about 5% for option maps and Samza mappings, 10-25% for damaged
    documents, 47% for properties text, 100% where every input must give a result), so that a run of 300
    random examples does not flake; a parser refusing everything, or nearly everything, fails."""

    def wrap(test):
        @functools.wraps(test)
        def run(*args, **kwargs):
            TALLY[:] = [0, 0]
            test(*args, **kwargs)
            accepted, tried = TALLY
            assert tried >= 50, f"only {tried} inputs parsed"
            assert accepted >= minimum * tried, f"{accepted} of {tried} inputs accepted (at least {minimum:.0%} wanted)"

        return run

    return wrap


# ---- strategies ---------------------------------------------------------------------------------------------
nasty_text = st.sampled_from([
    "", " ", "\t", "\n", "\x00", "\x7f", "\u2028", "..", "../x", "a/b", "/", "\\", "%2e%2e", "-1", "0", "1", "-0",
    "2147483648", "9223372036854775808", "9" * 5000, "1e3", "1.5", "nan", "inf", "true", "TRUE", "yes", "null",
    "{", "}", "[]", "{}", "[", '{"a":', '"x"', "0x10", "1_000", "²", "٣", "１２", "10s", "5 minutes", "12h", "1d",
    "500ms",
    "-5s", "10 parsecs", "earliest", "latest", "LATEST", "TRIM_HORIZON", "kcl", "AT_TIMESTAMP",
    "AT_TIMESTAMP:2026-11-22T08:00:00Z", "AT_TIMESTAMP:2026-11-22T08:00:00", "AT_TIMESTAMP:99999-01-01T00:00:00Z",
    "kafka.t#0", "kafka.t#[1-3]", "kafka.t#[3-1]", "kafka.t#[0-99999999999]", "kinesis.t#0", "#", "kafka.#1",
    "a,b;c,d", ";", ",", "a,,b", "(", "[a-", "*", "(?P<x>", "http://x", "https://", "ftp://x",
    "memory:", "file:///tmp/x", "s3://b/p", "dynamodb://t?region=r", "redis://x", "file://host/x",
    "GroupByPartition", "GroupByPartitionFixedTasks",
    "org.apache.samza.container.grouper.stream.GroupByPartitionFactory",
    "no.such.module.Cls", "os.system", "error", "drain-first", "none", "lineage", "balanced",
    '{"t":[0,1]}', '{"t":[]}', '{"t":[-1]}', '{"t":[true]}', '{"t":{"0":23,"1":-2}}', '{"t":{"0":-3}}',
    '{"t":{"x":1}}', '{"t":{"²":1}}', '{"t":{"0":1e3}}', '{"t":{"0":' + "9" * 400 + "}}", '{"shardId-1":"LATEST"}',
    '{"shardId-1":{"type":"AT_SEQUENCE_NUMBER","sequence":"12"}}', '{"s":{"type":"AT_TIMESTAMP","timestamp":-1}}',
    '{"s":{"type":"AFTER_SEQUENCE_NUMBER","sequence":"1","sub":"x"}}', '{"s":7}', '{"s":null}', "[[[[[[[[[[",
    "[" * 3000 + "]" * 3000,
])
values = nasty_text | st.text(max_size=30) | st.integers().map(str) | st.floats().map(str) | st.from_regex(
    r"-?[0-9]{1,25}\s?(ms|s|m|h|d|minutes|seconds)?", fullmatch=True)

KAFKA_KEYS = [
    "kafka.bootstrap.servers", "subscribe", "subscribePattern", "assign", "job.name", "metadata.store", "grouper",
    "expansion.algorithm", "expansion.ordering", "task.broadcast.inputs", "copartition", "startingOffsets",
    "startingTimestamp", "startingOffsetsByTimestamp", "startingOffsetsByTimestampStrategy", "maxOffsetsPerTrigger",
    "minOffsetsPerTrigger", "maxTriggerDelay", "failOnDataLoss", "includeHeaders", "startpoint.ttl",
    "startpoint.pollInterval", "commitOffsetsToKafka", "maxRowsPerArrowBatch", "kafkaConsumer.pollTimeoutMs",
    "job.ownership.ttl", "kafka.group.id", "kafka.enable.auto.commit", "kafka.auto.offset.reset",
    "kafka.isolation.level", "kafka.sasl.password", "kafka.security.protocol", "kafka.", "kafka.x",
]
KINESIS_KEYS = [
    "streamName", "region", "endpointUrl", "dynamodbEndpointUrl", "awsAccessKeyId", "awsSecretKey", "sessionToken",
    "roleArn", "roleSessionName", "job.name", "metadata.store", "tasks", "assignment", "startingPosition",
    "maxRecordsPerShard", "maxFetchTimePerShard", "kcl.leaseTable", "failOnDataLoss", "startpoint.ttl",
    "startpoint.pollInterval", "job.ownership.ttl",
]


huge_digits = st.integers(4290, 4400).map(lambda n: "9" * n)
deep_json = st.builds(lambda n, inner, kind: (("[" * n + inner + "]" * n) if kind else ('{"a":' * n + inner + "}" * n)),
                      st.integers(900, 5000), st.sampled_from(["", "1", '"x"']), st.booleans())
json_text = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6) | st.sampled_from(["²", "٣", "-1"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.text(max_size=6) | st.sampled_from(["0", "1", "²", "-1", "9" * 4400]), inner, max_size=3),
    max_leaves=12,
).map(lambda v: json.dumps(v, allow_nan=True)) | deep_json
numbers = (st.integers().map(str) | huge_digits | st.sampled_from(["²", "٣", "1_0", " 7 ", "+3", "0x1"])
           | st.from_regex(r"-?[0-9]{1,25}\s?(ms|s|m|h|d|minutes|seconds)?", fullmatch=True)
           | huge_digits.map(lambda d: d + "s"))
broadcast_values = st.builds(
    lambda sys_, stream, part: f"{sys_}.{stream}#{part}", st.sampled_from(["kafka", "kinesis", ""]),
    st.sampled_from(["t", "a.b", ""]), numbers | st.builds(lambda a, b: f"[{a}-{b}]", numbers, numbers))
#: per option, values shaped like what it expects (so parsing gets past the first check), plus anything
SHAPED = {
    "assign": json_text, "startingOffsets": json_text, "startingOffsetsByTimestamp": json_text,
    "startingPosition": json_text | st.sampled_from(["AT_TIMESTAMP:", "AT_TIMESTAMP:+99999-01-01T00:00:00Z"]),
    "task.broadcast.inputs": broadcast_values, "copartition": st.lists(broadcast_values, max_size=3).map(";".join),
    "maxOffsetsPerTrigger": numbers, "minOffsetsPerTrigger": numbers, "maxTriggerDelay": numbers,
    "startpoint.ttl": numbers, "startpoint.pollInterval": numbers, "maxRowsPerArrowBatch": numbers,
    "kafkaConsumer.pollTimeoutMs": numbers, "job.ownership.ttl": numbers, "startingTimestamp": numbers,
    "tasks": numbers, "maxRecordsPerShard": numbers, "maxFetchTimePerShard": numbers,
}


def option_maps(keys: list[str], base: dict[str, str], exclusive: tuple[str, ...] = ()) -> st.SearchStrategy:
    """A valid base, with some of the real keys (any case) set to random (often well-shaped) values, some removed,
    sometimes another of the mutually exclusive keys in place of the base's, and in some maps a few random keys
    (which option validation refuses as unknown, so they cannot be in every map)."""

    @st.composite
    def build(draw):
        out = dict(base)
        for key in draw(st.sets(st.sampled_from(sorted(base)))):
            out.pop(key, None)
        if exclusive and draw(st.booleans()):
            for key in exclusive:
                out.pop(key, None)
            key = draw(st.sampled_from(exclusive))
            out[key] = draw(SHAPED.get(key, values) | values)
        for key in draw(st.lists(st.sampled_from(keys), max_size=6)):
            cased = draw(st.sampled_from([key, key.lower(), key.upper()]))
            out[cased] = draw(SHAPED.get(key, values) | values)
        if draw(st.integers(0, 3)) == 0:  # random keys are refused as unknown options: in a quarter of the maps
            out.update(draw(st.dictionaries(st.text(max_size=12), values, max_size=2)))
        return out

    return build()


KAFKA_BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "orders", "job.name": "orders-job",
              "metadata.store": "memory:"}
KINESIS_BASE = {"streamName": "clicks", "job.name": "clicks-etl", "region": "eu-west-1", "metadata.store": "memory:"}
SECRET = "hunter2-SECRET-value"


# ---- options -------------------------------------------------------------------------------------------------
@accepts_a_fair_share(0.01)
@FUZZ
@given(option_maps(KAFKA_KEYS, KAFKA_BASE, ("subscribe", "subscribePattern", "assign")))
def test_kafka_options_raise_only_config_errors(raw):
    parsed = only_our_errors(KafkaSourceOptions.parse, raw)
    if parsed is not None:
        assert isinstance(parsed.describe(), str) and isinstance(repr(parsed), str)
        assert parsed.job_name == parsed.job_name.strip() and "/" not in parsed.job_name


@accepts_a_fair_share(0.03)
@FUZZ
@given(option_maps(KINESIS_KEYS, KINESIS_BASE))
def test_kinesis_options_raise_only_config_errors(raw):
    parsed = only_our_errors(KinesisSourceOptions.parse, raw)
    if parsed is not None:
        assert isinstance(parsed.describe(), str) and isinstance(repr(parsed), str)
        parsed.client_settings()


@accepts_a_fair_share(0.01)
@FUZZ
@given(option_maps(KAFKA_KEYS, KAFKA_BASE, ("subscribe", "subscribePattern", "assign")),
       st.sampled_from(["kafka.sasl.password", "kafka.ssl.key.password", "kafka.sasl.oauthbearer.client.secret"]))
def test_kafka_secrets_never_in_errors_or_descriptions(raw, secret_key):
    raw = {**raw, secret_key: SECRET}
    try:
        parsed = KafkaSourceOptions.parse(raw)
    except SamzaSourceError as err:
        tally(False)
        assert SECRET not in str(err)
        return
    tally(True)
    assert SECRET not in parsed.describe() and SECRET not in repr(parsed) and SECRET not in str(parsed)


@accepts_a_fair_share(0.03)
@FUZZ
@given(option_maps(KINESIS_KEYS, KINESIS_BASE), st.sampled_from(["awsSecretKey", "sessionToken"]))
def test_kinesis_secrets_never_in_errors_or_descriptions(raw, secret_key):
    raw = {**raw, "awsAccessKeyId": "AKIDEXAMPLE", "awsSecretKey": "other-secret", secret_key: SECRET}
    try:
        parsed = KinesisSourceOptions.parse(raw)
    except SamzaSourceError as err:
        tally(False)
        assert SECRET not in str(err)
        return
    tally(True)
    assert SECRET not in parsed.describe() and SECRET not in repr(parsed) and SECRET not in str(parsed)


ESCAPES = ["..", ".", "../etc", "a/../b", "a/b", "/abs", "a\\b", "a\nb", "a\x00b", "a\tb", "a\x7fb", "a\x1bb",
           ".hidden", "-dash", "a..b", "a" * 201, "ä", "a b", "a*", "a?", "%2e%2e"]


@pytest.mark.parametrize("name", ESCAPES)
@pytest.mark.parametrize("parse, base", [(KafkaSourceOptions.parse, KAFKA_BASE),
                                         (KinesisSourceOptions.parse, KINESIS_BASE)], ids=["kafka", "kinesis"])
def test_job_names_that_could_escape_the_store_namespace_are_refused(parse, base, name):
    with pytest.raises(SamzaSourceError, match="job.name .* is not allowed"):
        parse({**base, "job.name": name})


@accepts_a_fair_share(0.01)
@FUZZ
@given(st.text(max_size=40), st.sampled_from([(KafkaSourceOptions.parse, KAFKA_BASE),
                                               (KinesisSourceOptions.parse, KINESIS_BASE)]))
def test_any_job_name_accepted_is_a_safe_single_path_segment(name, source):
    parse, base = source
    parsed = only_our_errors(parse, {**base, "job.name": name})
    if parsed is not None:
        job = parsed.job_name
        assert job == name.strip() and job not in (".", "..") and ".." not in job
        assert not any(c in job for c in "/\\") and all(c.isprintable() and c != " " for c in job)
        assert job.isascii() and not job.startswith(".")


# ---- startpoints ---------------------------------------------------------------------------------------------
json_scalars = (st.none() | st.booleans() | st.integers() | st.integers(min_value=2**62, max_value=2**70)
                | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8) | nasty_text)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10) | nasty_text, inner, max_size=4),
    max_leaves=25,
)


def paths_of(doc, prefix=()):
    """Every path (tuple of keys/indexes) into a JSON document, the root included."""
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from paths_of(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from paths_of(v, prefix + (i,))


@st.composite
def damaged(draw, valid_docs):
    """A valid document with one to three random changes: a value replaced, a key removed or added, a list
    item dropped or duplicated, a number nudged or a string mangled."""
    doc = copy.deepcopy(draw(valid_docs))
    for _ in range(draw(st.integers(1, 3))):
        paths = list(paths_of(doc))
        path = draw(st.sampled_from(paths))
        if not path:
            if draw(st.booleans()):
                return draw(json_values)
            continue
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        last = path[-1]
        action = draw(st.sampled_from(["replace", "remove", "add", "nudge", "duplicate", "stringify"]))
        old = parent[last]
        if action == "replace":
            parent[last] = draw(json_values)
        elif action == "remove":
            del parent[last]
        elif action == "add" and isinstance(old, dict):
            old[draw(st.text(max_size=10) | nasty_text)] = draw(json_values)
        elif action == "add" and isinstance(old, list):
            old.append(draw(json_values))
        elif action == "nudge" and isinstance(old, int) and not isinstance(old, bool):
            parent[last] = old + draw(st.sampled_from([-(2**63), -old - 1, -1, 1, 2**63, 10**400]))
        elif action == "nudge" and isinstance(old, str):
            parent[last] = draw(st.sampled_from(["", old + "x", old[:-1], old.upper(), " " + old, old + "\x00",
                                                 "9" * 4400 + old]))
        elif action == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(old))
        elif action == "stringify":
            parent[last] = json.dumps(old) if not isinstance(old, str) else old
    return doc


VALID_STARTPOINTS = st.sampled_from([
    StartpointSpecific("42", creation_timestamp=1_700_000_000_000).to_json(),
    StartpointTimestamp(1_700_000_000_000, creation_timestamp=1_700_000_000_001).to_json(),
    StartpointOldest(creation_timestamp=5).to_json(),
    StartpointUpcoming(creation_timestamp=6).to_json(),
])


@accepts_a_fair_share(0.03)
@FUZZ
@given(damaged(VALID_STARTPOINTS) | json_values)
def test_startpoint_json_raises_only_our_errors_and_round_trips(value):
    startpoint = only_our_errors(Startpoint.from_json, value)
    if startpoint is not None:
        assert Startpoint.from_json(startpoint.to_json()) == startpoint


@accepts_a_fair_share(0.03)
@FUZZ
@given(st.text(max_size=60) | st.binary(max_size=60) | damaged(VALID_STARTPOINTS).map(
    lambda d: json.dumps(d, allow_nan=True)))
def test_startpoint_text_raises_only_our_errors(text):
    only_our_errors(Startpoint.from_json_str, text)


startpoint_keys = st.text(max_size=30) | nasty_text | st.builds(
    lambda sys_, stream, part, task: ".".join(p for p in (sys_, stream, part, task) if p is not None),
    st.sampled_from(["kafka", "k%2Ea", ""]), st.sampled_from(["t", "%25", "a%2Eb"]),
    numbers | st.sampled_from(["0", "07", "²"]), st.none() | st.sampled_from(["Partition 0", "P" + "9" * 4400, ""]))


@accepts_a_fair_share(0.9)
@FUZZ
@given(st.dictionaries(startpoint_keys, damaged(VALID_STARTPOINTS) | json_values, max_size=4))
def test_a_store_full_of_damaged_startpoints_is_read_with_our_errors_only(stored):
    store = open_store(f"memory:fuzz-{uuid.uuid4().hex}", "fuzz-job")
    for key, value in stored.items():
        try:
            store.put("startpoint", key, value)
        except (ValueError, TypeError):
            assume(False)  # not storable as JSON (NaN): no store would hold it
    manager = StartpointManager(store)
    model = JobModel({TaskName("Partition 0"): frozenset({SystemStreamPartition("kafka", "t", 0)})},
                     {SystemStream("kafka", "t"): 1})
    only_our_errors(lambda _: manager.fan_out(model), None)


# ---- stored checkpoints and job models ------------------------------------------------------------------------
SSP0, SSP1 = SystemStreamPartition("kafka", "orders", 0), SystemStreamPartition("kafka", "or.ders", 12)
CHECKPOINTS = [
    Checkpoint({TaskName("Partition 0"): {SSP0: 5, SSP1: "4961"}}, batch_id=3, timestamp_ms=1_700_000_000_000),
    Checkpoint({TaskName("Task-1"): {SSP0: {"shardId-1": {"type": "SHARD_END"}}}}, timestamp_ms=7),
]
VALID_CHECKPOINTS = st.sampled_from([c.to_json() for c in CHECKPOINTS])


def _mirror_records() -> list[tuple[str, dict]]:
    """(key, record) as a real :class:`CheckpointMirror` writes them, one per task of each checkpoint above."""
    out = []
    for checkpoint in CHECKPOINTS:
        store = open_store(f"memory:fuzz-{uuid.uuid4().hex}", "fuzz-job")
        CheckpointMirror(store).write(checkpoint)
        out += sorted(store.list("checkpoint").items())
    return out


MIRROR_RECORDS = _mirror_records()
VALID_JOB_MODELS = st.sampled_from([
    JobModel({TaskName("Partition 0"): frozenset({SSP0}), TaskName("Partition 12"): frozenset({SSP1, SSP0})},
             {SystemStream("kafka", "orders"): 4}, frozenset({SSP0})).to_json(),
])


@accepts_a_fair_share(0.03)
@FUZZ
@given(damaged(VALID_CHECKPOINTS) | json_values)
def test_checkpoint_json_raises_only_our_errors_and_round_trips(value):
    checkpoint = only_our_errors(Checkpoint.from_json, value)
    if checkpoint is not None:
        assert Checkpoint.from_json(json.loads(checkpoint.to_json_str())) == checkpoint


@accepts_a_fair_share(0.03)
@FUZZ
@given(st.text(max_size=80) | st.binary(max_size=40) | damaged(VALID_CHECKPOINTS).map(
    lambda d: json.dumps(d, allow_nan=True)))
def test_checkpoint_text_raises_only_our_errors(text):
    only_our_errors(Checkpoint.from_json_str, text)


@accepts_a_fair_share(0.03)
@FUZZ
@given(st.sampled_from(MIRROR_RECORDS).flatmap(
    lambda kv: st.tuples(st.just(kv[0]), damaged(st.just(kv[1])) | json_values)))
def test_checkpoint_mirror_reads_a_damaged_store_with_our_errors_only(entry):
    # the records a mirror writes (one per task, under the task's name), damaged: whole Checkpoint documents,
    # which the mirror never stores, would all be refused and test nothing
    key, value = entry
    store = open_store(f"memory:fuzz-{uuid.uuid4().hex}", "fuzz-job")
    try:
        store.put("checkpoint", key, value)
    except (ValueError, TypeError):
        assume(False)
    only_our_errors(lambda _: CheckpointMirror(store).read(), None)


@accepts_a_fair_share(0.03)
@FUZZ
@given(damaged(VALID_JOB_MODELS) | json_values)
def test_job_model_json_raises_only_our_errors_and_round_trips(value):
    model = only_our_errors(JobModel.from_json, value)
    if model is not None:
        assert JobModel.from_json(json.loads(model.to_json_str())) == model


@accepts_a_fair_share(0.03)
@FUZZ
@given(st.text(max_size=80) | damaged(VALID_JOB_MODELS).map(lambda d: json.dumps(d, allow_nan=True)))
def test_job_model_text_raises_only_our_errors(text):
    only_our_errors(JobModel.from_json_str, text)


@accepts_a_fair_share(0.03)
@FUZZ
@given(json_values | st.text(max_size=20).map(lambda t: f"kafka.{t}.3") | nasty_text)
def test_ssp_task_and_key_parsers_raise_only_our_errors(value):
    only_our_errors(SystemStreamPartition.from_json, value)
    only_our_errors(SystemStreamPartition.parse, value)
    only_our_errors(TaskName.from_json, value)
    only_our_errors(parse_ssp_key, value)
    only_our_errors(ShardPosition.from_json, value)


# ---- Spark offsets ---------------------------------------------------------------------------------------------
T0, T12 = TaskName("Partition 0"), TaskName("Partition 12")
KAFKA_OFFSET = KafkaOffset(
    JobModel({T0: frozenset({SSP0}), T12: frozenset({SSP1})}, {SystemStream("kafka", "orders"): 2,
                                                              SystemStream("kafka", "or.ders"): 13}),
    {(T0, SSP0): 10, (T12, SSP1): 7},
    rebases={(T0, SSP0): Rebase(3, "startpoint", 1_700_000_000_000)},
    applied={(T0, SSP0): 1_700_000_000_000},
).to_json()


@accepts_a_fair_share(0.03)
@FUZZ
@given(damaged(st.just(KAFKA_OFFSET)) | json_values)
def test_kafka_offset_json_raises_only_our_errors_and_round_trips(value):
    offset = only_our_errors(KafkaOffset.from_json, value)
    if offset is not None:
        assert KafkaOffset.from_json(json.loads(offset.to_json_str())) == offset


@accepts_a_fair_share(0.03)
@FUZZ
@given(st.text(max_size=80) | damaged(st.just(KAFKA_OFFSET)).map(lambda d: json.dumps(d, allow_nan=True)))
def test_kafka_offset_text_raises_only_our_errors(text):
    only_our_errors(KafkaOffset.from_json_str, text)


def sid(n: int) -> str:
    return f"shardId-{n:012d}"


KINESIS_OFFSET = KinesisOffset(
    batch=7, stream="clicks",
    mapper=ShardPartitionMapper(2, 2, {sid(2): 0, sid(3): 1, sid(4): 2}),
    shards={sid(0): ShardState(ShardPosition.shard_end(), DRAINED, "999"),
            sid(2): ShardState(ShardPosition.after_sequence("4961", 3), READABLE, "2999"),
            sid(3): ShardState(ShardPosition.at_timestamp(1_700_000_000_000), READABLE),
            sid(4): ShardState(ShardPosition.at_sequence("12"), READABLE)},
    startpoints={(TaskName("Task-0"), SystemStreamPartition("kinesis", "clicks", 1)): AppliedStartpoint(
        1_700_000_000_123, {sid(3): ShardPosition.at_timestamp(1_700_000_000_000)})},
    applied={(TaskName("Task-0"), SystemStreamPartition("kinesis", "clicks", 1)): 1_700_000_000_123},
    latest_timestamp_ms=1_699_999_999_000, query_id=uuid.UUID(int=7).hex,
).to_json()


@accepts_a_fair_share(0.03)
@FUZZ
@given(damaged(st.just(KINESIS_OFFSET)) | json_values)
def test_kinesis_offset_json_raises_only_our_errors_and_round_trips(value):
    offset = only_our_errors(KinesisOffset.from_json, value)
    if offset is not None:
        assert KinesisOffset.from_json(json.loads(offset.to_json_str())) == offset


@accepts_a_fair_share(0.03)
@FUZZ
@given(st.text(max_size=80) | damaged(st.just(KINESIS_OFFSET)).map(lambda d: json.dumps(d, allow_nan=True)))
def test_kinesis_offset_text_raises_only_our_errors(text):
    only_our_errors(KinesisOffset.from_json_str, text)


# ---- the driver lease -----------------------------------------------------------------------------------------
VALID_LEASE = {"version": 1, "owner": "a" * 32, "host": "h", "pid": 1, "machine": "m", "query": ["query:x"],
               "acquiredMs": 1, "renewedMs": 2, "ttlMs": 1000}


@accepts_a_fair_share(0.9)
@FUZZ
@given(damaged(st.just(VALID_LEASE)) | json_values)
def test_a_damaged_lease_record_gives_the_job_or_our_error(value):
    store = open_store(f"memory:fuzz-{uuid.uuid4().hex}", "fuzz-job")
    try:
        store.put(NAMESPACE, KEY, value)
    except (ValueError, TypeError):
        assume(False)
    lease = JobLease(store, heartbeat=False, wall_ms=lambda: 10**12, sleep=lambda s: None, machine="")
    try:
        lease.hold("query:y")
    except JobLeaseError as err:
        tally(False)
        assert "already in use" in str(err) or "could not acquire" in str(err)
        return
    tally(True)
    assert store.get(NAMESPACE, KEY)["owner"] == lease.owner_id


# ---- Samza job.properties ---------------------------------------------------------------------------------------
SAMZA_KEYS = [
    "job.name", "job.id", "task.inputs", "task.broadcast.inputs", "job.systemstreampartition.grouper.factory",
    "job.system.partition.expansion.algorithm", "systems.kafka.samza.factory",
    "systems.kafka.consumer.bootstrap.servers",
    "systems.kafka.consumer.zookeeper.connect", "systems.kafka.samza.offset.default", "systems.kafka.consumer.group.id",
    "systems.kafka.streams.orders.samza.offset.default", "systems.kafka.streams.orders.samza.reset.offset",
    "systems.kafka.streams.orders.samza.bootstrap", "systems.kafka.streams.orders.samza.priority",
    "systems.kafka.consumer.auto.offset.reset", "systems.kafka.consumer.security.protocol",
    "systems.kafka.consumer.sasl.password", "systems.kinesis.samza.factory",
    "systems.kinesis.streams.clicks.aws.region",
    "systems.kinesis.aws.region", "systems.kinesis.streams.clicks.aws.accessKey",
    "systems.kinesis.streams.clicks.aws.secretKey", "sensitive.systems.kinesis.streams.clicks.aws.secretKey",
    "streams.orders.samza.system", "streams.orders.samza.physical.name", "job.config.rewriters",
    "job.config.rewriter.regex.class", "job.config.rewriter.regex.regex", "job.config.rewriter.regex.system",
    "task.checkpoint.factory", "job.coordinator.system", "job.elasticity.factor", "task.class", "metadata.store",
    "maxOffsetsPerTrigger", "startingOffsets", "job.container.count", "serializers.registry.json.class",
]
SAMZA_BASE = {"job.name": "orders-enricher", "task.inputs": "kafka.orders",
              "systems.kafka.samza.factory": "org.apache.samza.system.kafka.KafkaSystemFactory",
              "systems.kafka.consumer.bootstrap.servers": "b:9092"}
samza_values = values | st.sampled_from([
    "kafka.orders", "kafka.orders,kinesis.clicks", "kafka.orders#0", "kafka.orders#[0-1]", "oldest", "upcoming",
    "org.apache.samza.system.kinesis.KinesisSystemFactory", "org.apache.samza.system.kafka.KafkaSystemFactory",
    "org.apache.samza.container.grouper.stream.GroupByPartitionFactory", "regex",
    "org.apache.samza.config.RegExTopicGenerator", "orders-.*", "kafka", "kinesis", "2", "1",
])


@accepts_a_fair_share(0.01)
@FUZZ
@given(option_maps(SAMZA_KEYS, SAMZA_BASE) | st.dictionaries(
    st.sampled_from(SAMZA_KEYS), samza_values, max_size=8), st.sampled_from([None, "kafka", "kinesis", "nope"]))
def test_samza_properties_mappings_raise_only_config_errors(mapping, system):
    result = only_our_errors(lambda m: import_mapping(m, system=system), mapping)
    if result is not None:
        assert isinstance(result.describe(), str)
        assert "hunter2" not in repr(result)


@accepts_a_fair_share(0.25)
@FUZZ
@given(st.lists(st.sampled_from(SAMZA_KEYS) | st.text(max_size=15), max_size=6).flatmap(
    lambda keys: st.lists(st.tuples(st.just(0), samza_values | st.text(max_size=20)), min_size=len(keys),
                          max_size=len(keys)).map(lambda vs: list(zip(keys, [v for _, v in vs], strict=True)))),
    st.sampled_from(["=", ": ", " ", "\t", "=\\\n  ", "\\u00", "\\u12zz", "\\"]))
def test_properties_text_raises_only_config_errors(entries, separator):
    text = "\n".join(f"{k}{separator}{v}" for k, v in entries)
    parsed = only_our_errors(parse_properties, text)
    if parsed is not None:
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in parsed.items())
        only_our_errors(import_mapping, parsed)


@accepts_a_fair_share(0.03)
@FUZZ
@given(st.text(max_size=120) | st.lists(st.tuples(st.text(max_size=8), st.text(max_size=6), values), max_size=4).map(
    lambda rows: "\n".join(f"tasknames.{t}.systems.kafka.streams.{s}.partitions.0={o}" for t, s, o in rows)))
def test_samza_checkpoint_text_raises_only_config_errors(text):
    out = only_our_errors(starting_offsets_from_samza_checkpoint, text)
    if out is not None:
        assert isinstance(json.loads(out), dict)


BIG = "9" * 5000
DEEP = "[" * 100_000 + "]" * 100_000
KAFKA_OK = {**KAFKA_BASE}
del KAFKA_OK["subscribe"]


@pytest.mark.parametrize("parse, value", [
    # found by the fuzz tests above, each once a bare ValueError / RecursionError
    (KafkaSourceOptions.parse, {**KAFKA_OK, "assign": DEEP}),
    (KafkaSourceOptions.parse, {**KAFKA_BASE, "startingOffsets": DEEP}),
    (KafkaSourceOptions.parse, {**KAFKA_BASE, "startingOffsetsByTimestamp": '{"a":' * 100_000 + "1" + "}" * 100_000}),
    (KafkaSourceOptions.parse, {**KAFKA_BASE, "maxTriggerDelay": BIG}),
    (KafkaSourceOptions.parse, {**KAFKA_BASE, "startpoint.ttl": BIG + "s"}),
    (KafkaSourceOptions.parse, {**KAFKA_BASE, "task.broadcast.inputs": "kafka.t#" + BIG}),
    (KafkaSourceOptions.parse, {**KAFKA_BASE, "task.broadcast.inputs": f"kafka.t#[0-{BIG}]"}),
    (KinesisSourceOptions.parse, {**KINESIS_BASE, "startingPosition": '{"s":' + DEEP + "}"}),
    (KinesisSourceOptions.parse, {**KINESIS_BASE, "maxFetchTimePerShard": BIG}),
    (JobModel.from_json_str, DEEP),
    (KafkaOffset.from_json_str, DEEP),
    (KafkaOffset.from_json, {**KAFKA_OFFSET, "barriers": {"kafka.t.²": {"sibling": "kafka.t.0", "drainTo": 1}}}),
    (parse_ssp_key, "kafka.t.²"),
    (parse_ssp_key, "kafka.t." + BIG),
    (SystemStreamPartition.parse, f"SystemStreamPartition [a, b, {BIG}]"),
])
def test_inputs_that_once_escaped_as_bare_errors(parse, value):
    with pytest.raises(SamzaSourceError):
        parse(value)


@pytest.mark.parametrize("parse, value", [
    (JobModel.from_json, {"tasks": {BIG: []}}),
    (JobModel.from_json, {"tasks": {"a": [], "Partition " + BIG: []}}),
    (Checkpoint.from_json, {"version": 1, "timestamp": 1, "tasks": {"a": [], BIG: []}}),
])
def test_task_names_with_thousands_of_digits_are_just_names(parse, value):
    parsed = parse(value)  # once a bare ValueError while sorting the tasks
    assert type(parsed).from_json(json.loads(parsed.to_json_str())) == parsed


def test_startpoint_keys_with_huge_partitions_are_reported_as_malformed():
    store = open_store(f"memory:fuzz-{uuid.uuid4().hex}", "fuzz-job")
    store.put("startpoint", "kafka.t." + BIG, StartpointOldest().to_json())
    store.put("startpoint", "kafka.t.0", StartpointOldest().to_json())
    model = JobModel({TaskName("Partition 0"): frozenset({SystemStreamPartition("kafka", "t", 0)})},
                     {SystemStream("kafka", "t"): 1})
    try:
        fanned = StartpointManager(store).fan_out(model)
    except SamzaSourceError as err:  # the manager may refuse the store outright, naming the bad key
        assert "kafka.t.999" in str(err)
    else:
        assert list(fanned) == [(SystemStreamPartition("kafka", "t", 0), TaskName("Partition 0"))]


def test_task_order_is_still_natural_and_numeric():
    names = ["Partition 10", "Partition 2", "Partition 002", "Partition " + BIG, "Partition 1", "Task-0", "Partition"]
    ordered = [t.name for t in sorted(TaskName(n) for n in names)]
    assert ordered == ["Partition", "Partition 1", "Partition 002", "Partition 2", "Partition 10",
                       "Partition " + BIG, "Task-0"]


def test_a_damaged_store_file_nested_too_deep_is_our_error(tmp_path):
    store = open_store(f"file://{tmp_path}/md", "fuzz-job")
    store.put("jobmodel", "current", {"tasks": {}})
    (path,) = (tmp_path / "md" / "fuzz-job" / "jobmodel").glob("*.json")
    path.write_text('{"format": 1, "key": "current", "value": ' + DEEP + "}")
    with pytest.raises(SamzaSourceError, match="not valid JSON"):
        store.get("jobmodel", "current")


def test_the_damage_strategy_reaches_deep_values():
    # Guards the tests above against passing vacuously: a fixed sample of damaged Kafka offsets must contain
    # documents that still parse and documents that fail deep inside (a task's position, a rebase).
    seen = {"ok": 0, "error": 0}

    @settings(max_examples=200, deadline=None, database=None)
    @given(damaged(st.just(KAFKA_OFFSET)))
    def probe(value):
        seen["ok" if only_our_errors(KafkaOffset.from_json, value) is not None else "error"] += 1

    probe()
    assert seen["ok"] > 5 and seen["error"] > 50
