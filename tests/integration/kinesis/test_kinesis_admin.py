"""KinesisAdmin and the client factory against moto in server mode (real boto3 over HTTP), or a real endpoint.

Also pins down what moto 5.2 does on SplitShard / MergeShards (see ``samza_devkit/kinesis_helpers.py``) and checks the
opt-in fix that makes it reshard like Kinesis, on a private in-process moto server.
"""

from __future__ import annotations

import time

import pytest
from botocore.exceptions import ClientError

from samza_devkit import kinesis_helpers as kh
from spark_samza_source.core.errors import ConfigError
from spark_samza_source.kinesis.client import AwsClientSettings, clear_client_cache, dynamodb_client, kinesis_client
from spark_samza_source.kinesis.driver import admin as admin_module
from spark_samza_source.kinesis.driver.admin import KinesisAdmin, iterator_request
from spark_samza_source.kinesis.errors import KinesisStreamNotFoundError, KinesisThrottledError
from spark_samza_source.kinesis.executor.shard_reads import read_shard
from spark_samza_source.kinesis.kpl import UserRecord
from spark_samza_source.kinesis.positions import ShardPosition
from spark_samza_source.kinesis.shards import ShardInfo

MAX_HASH = 2**128 - 1


def sid(n: int) -> str:
    return f"shardId-{n:012d}"


def first_record(kinesis, iterator: str) -> str | None:
    records = kinesis.get_records(ShardIterator=iterator, Limit=1)["Records"]
    return records[0]["SequenceNumber"] if records else None


# ---- shards and lineage ---------------------------------------------------------------------------------------------
def test_list_shards_of_a_new_stream(kinesis, make_stream):
    stream = make_stream(3)
    shards = KinesisAdmin(kinesis).list_shards(stream)
    assert [s.shard_id for s in shards] == [sid(0), sid(1), sid(2)]
    assert all(isinstance(s, ShardInfo) and not s.closed and s.parent_ids == () for s in shards)
    assert shards[0].hash_start == 0 and shards[-1].hash_end == MAX_HASH
    assert all(a.hash_end + 1 == b.hash_start for a, b in zip(shards, shards[1:], strict=False))


def test_lineage_after_split_and_merge(kinesis, make_stream):
    """What moto reports after SplitShard and MergeShards: parent ids, hash ranges and ending sequence numbers are
    right; (unpatched) moto routes later puts to the closed parent, which is why no put happens after a reshard
    here (see test_moto_fix_reshards_like_kinesis)."""
    stream = make_stream(2)
    puts = kh.put_records(kinesis, stream, [f"r{i}".encode() for i in range(5)], explicit_hash_key=0)
    assert {p.shard_id for p in puts} == {sid(0)}
    admin = KinesisAdmin(kinesis)
    before = {s.shard_id: s for s in admin.list_shards(stream)}
    split_at = int(kh.split_shard(kinesis, stream, sid(0)))
    after_split = {s.shard_id: s for s in admin.list_shards(stream)}
    parent, low, high = after_split[sid(0)], after_split[sid(2)], after_split[sid(3)]
    assert parent.closed and parent.ending_sequence == puts[-1].sequence
    assert (parent.hash_start, parent.hash_end) == (before[sid(0)].hash_start, before[sid(0)].hash_end)
    assert low.parent_ids == high.parent_ids == (sid(0),)
    assert (low.hash_start, low.hash_end, high.hash_start, high.hash_end) == (
        parent.hash_start, split_at - 1, split_at, parent.hash_end)
    assert not low.closed and not high.closed and not after_split[sid(1)].closed

    kh.merge_shards(kinesis, stream, sid(2), sid(3))
    after_merge = {s.shard_id: s for s in admin.list_shards(stream)}
    child = after_merge[sid(4)]
    assert child.parent_ids == (sid(2), sid(3))  # ParentShardId, then AdjacentParentShardId
    assert (child.hash_start, child.hash_end) == (parent.hash_start, parent.hash_end) and not child.closed
    assert after_merge[sid(2)].closed and after_merge[sid(3)].closed
    assert after_merge[sid(2)].ending_sequence == "0"  # moto: a closed shard that never held a record
    assert sorted(after_merge) == [sid(i) for i in range(5)]


def test_list_shards_pages_through_many_shards(kinesis, make_stream, monkeypatch):
    stream = make_stream(11)
    monkeypatch.setattr(admin_module, "_LIST_PAGE", 4)
    calls = []
    kinesis.meta.events.register("before-parameter-build.kinesis.ListShards",
                                lambda params, **kw: calls.append(dict(params)))
    shards = KinesisAdmin(kinesis).list_shards(stream)
    assert [s.shard_id for s in shards] == [sid(i) for i in range(11)]
    assert calls[0]["StreamName"] == stream and "NextToken" not in calls[0]
    # AWS wants NextToken alone; moto refuses that (InvalidToken) and gets the stream name too
    assert "NextToken" in calls[1] and "StreamName" not in calls[1]
    assert all("NextToken" in c and c.get("StreamName") == stream for c in calls[2:]) and len(calls) == 4


def test_missing_stream_and_shard_are_named_with_the_endpoint(kinesis, moto_server, aws_region):
    admin = KinesisAdmin(kinesis)
    with pytest.raises(KinesisStreamNotFoundError, match=rf"stream 'no-such-stream' not found \(region "
                                                         rf"{aws_region}, endpoint {moto_server}\).*streamName"):
        admin.list_shards("no-such-stream")


def test_missing_shard_is_named(kinesis, make_stream):
    stream = make_stream(1)
    with pytest.raises(KinesisStreamNotFoundError, match=rf"shard {sid(9)} of stream '{stream}' not found.*expired"):
        KinesisAdmin(kinesis).shard_iterator(stream, sid(9), ShardPosition.trim_horizon())


def test_throttled_list_shards_is_retried_then_fails_clearly(kinesis, make_stream):
    stream = make_stream(1)
    failures = {"left": 2}

    def throttle(**kwargs):
        if failures["left"] > 0:
            failures["left"] -= 1
            raise ClientError({"Error": {"Code": "LimitExceededException", "Message": "Rate exceeded"}}, "ListShards")

    kinesis.meta.events.register("before-call.kinesis.ListShards", throttle)
    admin = KinesisAdmin(kinesis, backoff_base_s=0.01)
    assert [s.shard_id for s in admin.list_shards(stream)] == [sid(0)] and failures["left"] == 0
    failures["left"] = 100
    with pytest.raises(KinesisThrottledError, match=rf"ListShards of stream '{stream}'.*3 retries"):
        KinesisAdmin(kinesis, max_retries=3, backoff_base_s=0.01).list_shards(stream)


# ---- iterators and probes -------------------------------------------------------------------------------------------
def test_iterators_for_every_position_type(kinesis, make_stream):
    stream = make_stream(1)
    puts = kh.put_records(kinesis, stream, [b"a", b"b", b"c", b"d"])
    time.sleep(0.05)
    mark = int(time.time() * 1000)
    time.sleep(0.05)
    late = kh.put_records(kinesis, stream, [b"e"])
    admin = KinesisAdmin(kinesis)
    seq = [p.sequence for p in puts]

    def first(pos: ShardPosition) -> str | None:
        return first_record(kinesis, admin.shard_iterator(stream, sid(0), pos))

    assert first(ShardPosition.trim_horizon()) == seq[0]
    assert first(ShardPosition.at_sequence(seq[1])) == seq[1]
    assert first(ShardPosition.after_sequence(seq[1])) == seq[2]
    assert first(ShardPosition.after_sequence(seq[1], 0)) == seq[1]  # inside an aggregate: at the record
    assert first(ShardPosition.at_timestamp(mark)) == late[0].sequence
    assert admin.shard_iterator(stream, sid(0), ShardPosition.shard_end()) is None
    assert iterator_request(ShardPosition.after_sequence("5"), at_for_after=True) == {
        "ShardIteratorType": "AT_SEQUENCE_NUMBER", "StartingSequenceNumber": "5"}
    assert KinesisAdmin.latest_timestamp_position(123) == ShardPosition.at_timestamp(123)
    assert abs(KinesisAdmin.latest_timestamp_position().timestamp_ms - time.time() * 1000) < 60_000


def test_has_records_probe(kinesis, make_stream):
    stream = make_stream(2)
    admin = KinesisAdmin(kinesis)
    assert not admin.has_records(stream, sid(0), ShardPosition.trim_horizon())
    plain = kh.put_records(kinesis, stream, [b"x"], explicit_hash_key=0)
    assert admin.has_records(stream, sid(0), ShardPosition.trim_horizon())
    assert not admin.has_records(stream, sid(0), ShardPosition.after_sequence(plain[0].sequence))
    (agg,) = kh.put_aggregated(kinesis, stream, [[UserRecord("k", b"1"), UserRecord("k", b"2")]],
                               explicit_hash_key=0)
    assert admin.has_records(stream, sid(0), ShardPosition.after_sequence(plain[0].sequence))
    assert admin.has_records(stream, sid(0), ShardPosition.after_sequence(agg.sequence, 0))  # sub 1 left
    assert not admin.has_records(stream, sid(0), ShardPosition.after_sequence(agg.sequence, 1))
    assert not admin.has_records(stream, sid(0), ShardPosition.after_sequence(agg.sequence))
    assert not admin.has_records(stream, sid(0), ShardPosition.shard_end())
    assert not admin.has_records(stream, sid(1), ShardPosition.trim_horizon())


# ---- client factory -------------------------------------------------------------------------------------------------
def test_clients_from_option_settings_keep_secrets_out_of_text(moto_server, aws_region, make_stream):
    stream = make_stream(1)
    clear_client_cache()
    settings = {"region": aws_region, "endpoint_url": moto_server, "dynamodb_endpoint_url": None,
                "access_key_id": "AKIAEXAMPLEKEY0001", "secret_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYSECRET",
                "session_token": "FwoGZXIvYXdzEXAMPLETOKEN", "role_arn": None, "role_session_name": "samza-job"}
    client = kinesis_client(settings)
    assert client is kinesis_client(settings)  # cached per process
    assert [s.shard_id for s in KinesisAdmin(client).list_shards(stream)] == [sid(0)]
    assert dynamodb_client(settings).meta.endpoint_url == moto_server
    cfg = AwsClientSettings.from_settings(settings)
    for text in (repr(cfg), cfg.describe()):
        assert "SECRET" not in text and "EXAMPLETOKEN" not in text and "AKIAEXAMPLEKEY0001" not in text
        assert moto_server in text
    leaked = f"signature for AKIAEXAMPLEKEY0001 with {settings['secret_key']} / {settings['session_token']}"
    assert cfg.scrub(leaked) == "signature for *** with *** / ***"
    with pytest.raises(ConfigError, match="both the access key id and the secret key"):
        AwsClientSettings(access_key_id="AKIAONLY")
    with pytest.raises(ConfigError, match="unknown AWS client settings"):
        AwsClientSettings.from_settings({"region": "x", "password": "y"})


def test_role_arn_assumes_the_role_through_sts(moto_server, aws_region, make_stream):
    stream = make_stream(1)
    clear_client_cache()
    settings = AwsClientSettings(region=aws_region, endpoint_url=moto_server, sts_endpoint_url=moto_server,
                                 access_key_id="AKIABASEKEY0000001", secret_key="base-secret-key-value",
                                 role_arn="arn:aws:iam::123456789012:role/stream-reader", role_session_name="samza-t")
    client = kinesis_client(settings)
    creds = client._request_signer._credentials.get_frozen_credentials()
    assert creds.access_key != "AKIABASEKEY0000001" and creds.token  # temporary credentials from STS
    assert [s.shard_id for s in KinesisAdmin(client).list_shards(stream)] == [sid(0)]
    assert "assuming role arn:aws:iam::123456789012:role/stream-reader" in settings.describe()


# ---- moto's resharding, and the fix ---------------------------------------------------------------------------------
@pytest.fixture
def fixed_moto(moto_server):
    """A private in-process moto server with apply_moto_kinesis_fixes (the shared one runs in another process)."""
    from moto.server import ThreadedMotoServer

    with kh.moto_kinesis_fixes():
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        try:
            yield f"http://{host}:{port}"
        finally:
            server.stop()


def test_moto_fix_reshards_like_kinesis(fixed_moto, aws_region):
    kinesis = kh.kinesis_client(fixed_moto, aws_region)
    stream = kh.create_stream(kinesis, kh.unique_stream_name("fix"), 1)
    old = kh.put_records(kinesis, stream, [("k", f"old-{i}".encode(), i) for i in range(3)])
    split_at = int(kh.split_shard(kinesis, stream, sid(0)))
    new = kh.put_records(kinesis, stream, [("k", b"low", 5), ("k", b"high", split_at), ("k", b"top", MAX_HASH)])
    assert [p.shard_id for p in new] == [sid(1), sid(2), sid(2)]  # children, inclusive ending hash key
    admin = KinesisAdmin(kinesis)
    shards = {s.shard_id: s for s in admin.list_shards(stream)}
    assert shards[sid(0)].ending_sequence == old[-1].sequence  # no longer moves: nothing lands in the parent
    parent = read_shard(kinesis, stream, sid(0), ShardPosition.trim_horizon(), task="t",
                        ending_sequence=shards[sid(0)].ending_sequence, min_call_interval_ms=0)
    assert parent.table().column("data").to_pylist() == [b"old-0", b"old-1", b"old-2"] and parent.end.is_shard_end
    kh.merge_shards(kinesis, stream, sid(2), sid(1))  # the upper shard first: moto's own check refuses this order
    merged = kh.put_records(kinesis, stream, [("k", b"after-merge", 7)])
    assert merged[0].shard_id == sid(3)
    shards = {s.shard_id: s for s in admin.list_shards(stream)}
    assert shards[sid(3)].parent_ids == (sid(2), sid(1)) and (shards[sid(3)].hash_start, shards[sid(3)].hash_end) == (
        0, MAX_HASH)
    for closed in (sid(1), sid(2)):
        res = read_shard(kinesis, stream, closed, ShardPosition.trim_horizon(), task="t",
                         ending_sequence=shards[closed].ending_sequence, min_call_interval_ms=0)
        assert res.end.is_shard_end
    child = read_shard(kinesis, stream, sid(3), ShardPosition.trim_horizon(), task="t", min_call_interval_ms=0)
    assert child.table().column("data").to_pylist() == [b"after-merge"]  # the parents' records stay in the parents
    kinesis.close()


def test_moto_fix_serializes_concurrent_puts_and_gets(fixed_moto, aws_region):
    """Unfixed moto answers HTTP 500 when GetRecords iterates a shard that a put is growing, and two concurrent
    puts can take the same sequence number (one record lost). No retries here, so a 500 would surface."""
    import threading

    import boto3
    from botocore.config import Config

    def client():
        return boto3.client("kinesis", endpoint_url=fixed_moto, region_name=aws_region, aws_access_key_id="test",
                            aws_secret_access_key="test", config=Config(retries={"total_max_attempts": 1}))

    setup = client()
    stream = kh.create_stream(setup, kh.unique_stream_name("lock"), 1)
    errors: list[BaseException] = []
    done = threading.Event()

    def put(writer: int) -> None:
        c = client()
        try:
            for i in range(20):
                c.put_records(StreamName=stream, Records=[{"PartitionKey": "k", "Data": f"{writer}-{i}-{j}".encode()}
                                                          for j in range(50)])
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    def get() -> None:
        c = client()
        try:
            while not done.is_set():
                it = c.get_shard_iterator(StreamName=stream, ShardId=sid(0),
                                          ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
                c.get_records(ShardIterator=it, Limit=10_000)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    readers = [threading.Thread(target=get) for _ in range(2)]
    writers = [threading.Thread(target=put, args=(w,)) for w in range(4)]
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join(120)
    done.set()
    for t in readers:
        t.join(120)
    assert errors == []
    got = kh.read_shard_raw(setup, stream, sid(0))
    sequences = [r["SequenceNumber"] for r in got]
    assert len(got) == 4 * 20 * 50 and len(set(sequences)) == len(sequences)


@pytest.mark.both_emulators
@pytest.mark.kinesis_mock_too
def test_records_put_right_after_a_reshard_are_stamped_when_they_arrive(kinesis, make_stream):
    """The devkit's split and merge wait out kinesalite's future-dated children (their records would otherwise
    carry an ApproximateArrivalTimestamp up to a second ahead, which an AvailableNow run started in that second
    leaves for a later run). On every emulator a record put at once after a reshard is stamped no later than a
    read that follows it, as AWS stamps records when they arrive."""
    stream = make_stream(1)
    kh.split_shard(kinesis, stream, sid(0))
    after_split = time.time()
    kh.put_records(kinesis, stream, [b"after-split"], explicit_hash_key=0)
    kh.merge_shards(kinesis, stream, sid(1), sid(2))
    kh.put_records(kinesis, stream, [b"after-merge"], explicit_hash_key=0)
    read_at = time.time()
    stamps = {r["Data"]: r["ApproximateArrivalTimestamp"].timestamp()
              for shard in (sid(1), sid(3)) for r in kh.read_shard_raw(kinesis, stream, shard)}
    assert set(stamps) == {b"after-split", b"after-merge"}
    assert all(after_split - 1.0 <= stamp <= read_at + 0.01 for stamp in stamps.values()), (stamps, read_at)


def test_kinesalite_creation_time_is_read_from_its_sequence_numbers_only():
    created = 1_796_009_974
    kinesalite_start = int("2" + format(created, "09x") + "1" + "0" * 16 + "00" + format(created, "09x")
                           + "00000001" + "2", 16)
    assert kh.kinesalite_shard_created_s(str(kinesalite_start)) == created
    assert kh.kinesalite_shard_created_s("1") is None  # moto's counters
    assert kh.kinesalite_shard_created_s("9223372036854775807") is None
