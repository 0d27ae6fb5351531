"""DynamoDBMetadataStore against moto in server mode: table life cycle, item layout, limits and errors."""

from __future__ import annotations

import threading
import urllib.parse

import boto3
import pytest

from spark_samza_source.core.errors import ConfigError, MetadataStoreError
from spark_samza_source.metadata import DynamoDBMetadataStore, open_store
from spark_samza_source.metadata.dynamodb import MAX_SORT_KEY_BYTES, sort_key


def _table(uri: str) -> str:
    return urllib.parse.urlsplit(uri).netloc


@pytest.fixture
def client(moto_server: str, aws_region: str):
    c = boto3.client("dynamodb", region_name=aws_region, endpoint_url=moto_server)
    yield c
    c.close()


def test_table_is_created_on_first_use_with_the_documented_layout(dynamodb_store_uri: str, client) -> None:
    table = _table(dynamodb_store_uri)
    store = open_store(dynamodb_store_uri, "orders-enricher")
    assert table not in client.list_tables()["TableNames"]  # opening does no I/O
    store.put("startpoints", "Partition 3", {"@type": "Oldest"})
    desc = client.describe_table(TableName=table)["Table"]
    assert sorted((k["AttributeName"], k["KeyType"]) for k in desc["KeySchema"]) == [("pk", "HASH"), ("sk", "RANGE")]
    assert desc["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    (item,) = client.scan(TableName=table)["Items"]
    assert item == {"pk": {"S": "orders-enricher/startpoints"}, "sk": {"S": "Partition 3"},
                    "key": {"S": "Partition 3"}, "value": {"S": '{"@type":"Oldest"}'}, "format": {"N": "1"}}


def test_long_empty_and_hash_prefixed_keys_get_a_hashed_sort_key(dynamodb_store_uri: str, client) -> None:
    store = open_store(dynamodb_store_uri, "job")
    keys = ["x" * MAX_SORT_KEY_BYTES, "x" * (MAX_SORT_KEY_BYTES + 1), "é" * 600, "", "#sha256:abc", "#"]
    for i, key in enumerate(keys):
        store.put("ns", key, i)
    sks = {i["key"]["S"]: i["sk"]["S"] for i in client.scan(TableName=_table(dynamodb_store_uri))["Items"]}
    assert sks[keys[0]] == keys[0]  # exactly at the limit: kept as is
    for key in keys[1:]:
        assert sks[key].startswith("#sha256:") and len(sks[key]) == 8 + 64 and sks[key] == sort_key(key)
    assert store.list("ns") == {key: i for i, key in enumerate(keys)}


def test_list_follows_pagination(dynamodb_store_uri: str, monkeypatch) -> None:
    store = open_store(dynamodb_store_uri, "job")
    assert isinstance(store, DynamoDBMetadataStore)
    expected = {f"task-{i:03d}": {"i": i} for i in range(57)}
    for key, value in expected.items():
        store.put("ns", key, value)
    store.put("other", "task-000", "elsewhere")
    calls = []
    original = store._client.query  # the process's client for these settings: put back after the test
    monkeypatch.setattr(store._client, "query", lambda **kw: calls.append(kw) or original(**kw))
    store.query_limit = 10
    assert store.list("ns") == expected
    assert len(calls) >= 6 and "ExclusiveStartKey" in calls[-1]


def test_missing_table_with_create_table_false(dynamodb_store_uri: str) -> None:
    store = open_store(dynamodb_store_uri + "&create_table=false", "job")
    with pytest.raises(MetadataStoreError) as info:
        store.get("ns", "k")
    message = str(info.value)
    assert _table(dynamodb_store_uri) in message and "create_table=false" in message and "pk (S)" in message


def test_a_table_with_another_key_schema_is_refused(dynamodb_store_uri: str, client) -> None:
    table = _table(dynamodb_store_uri)
    client.create_table(TableName=table, KeySchema=[{"AttributeName": "leaseKey", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "leaseKey", "AttributeType": "S"}],
                        BillingMode="PAY_PER_REQUEST")  # e.g. a KCL lease table named by mistake
    store = open_store(dynamodb_store_uri, "job")
    with pytest.raises(MetadataStoreError, match=rf"{table}.*needs pk \(string, HASH\) and sk"):
        store.put("ns", "k", 1)


def test_a_table_deleted_behind_the_store_is_recreated(dynamodb_store_uri: str, client) -> None:
    store = open_store(dynamodb_store_uri, "job")
    store.put("ns", "k", 1)
    client.delete_table(TableName=_table(dynamodb_store_uri))
    assert store.get("ns", "k") is None
    store.put("ns", "k", 2)
    assert open_store(dynamodb_store_uri, "job").get("ns", "k") == 2


def test_items_over_400_kb_fail_clearly(dynamodb_store_uri: str) -> None:
    store = open_store(dynamodb_store_uri, "job")
    with pytest.raises(MetadataStoreError) as info:
        store.put("ns", "Partition 1", "x" * 500_000)
    message = str(info.value)
    assert "'Partition 1'" in message and "400 KB" in message and _table(dynamodb_store_uri) in message


def test_corrupt_item_names_the_key(dynamodb_store_uri: str, client) -> None:
    store = open_store(dynamodb_store_uri, "job")
    store.put("ns", "Partition 2", 1)
    client.update_item(TableName=_table(dynamodb_store_uri),
                       Key={"pk": {"S": "job/ns"}, "sk": {"S": "Partition 2"}},
                       UpdateExpression="SET #v = :v", ExpressionAttributeNames={"#v": "value"},
                       ExpressionAttributeValues={":v": {"S": "{not json"}})
    for call in (lambda: store.get("ns", "Partition 2"), lambda: store.list("ns"),
                 lambda: store.delete_if_equal("ns", "Partition 2", 1)):
        with pytest.raises(MetadataStoreError, match=r"corrupt value for key 'Partition 2'.*not valid JSON"):
            call()


def test_unreachable_endpoint_fails_with_table_and_key_but_no_secret(aws_region: str) -> None:
    uri = (f"dynamodb://samza-unreachable?region={aws_region}&endpoint=http://127.0.0.1:1&max_attempts=1"
           "&aws_access_key_id=AKIAEXAMPLEID&aws_secret_access_key=Sup3rS3cretValue")
    store = open_store(uri, "job")
    with pytest.raises(MetadataStoreError) as info:
        store.put("ns", "Partition 9", 1)
    message = str(info.value)
    assert "samza-unreachable" in message and "endpoint" in message
    assert "Sup3rS3cretValue" not in message and "AKIAEXAMPLEID" not in message
    assert "Sup3rS3cretValue" not in store.uri


def test_put_if_absent_has_one_winner_across_threads(dynamodb_store_uri: str) -> None:
    stores = [open_store(dynamodb_store_uri, "job") for _ in range(8)]
    stores[0].put("ns", "warm-up", 0)  # create the table before the race
    wins: list[int] = []
    barrier = threading.Barrier(len(stores))

    def claim(i: int) -> None:
        barrier.wait()
        for c in range(10):
            if stores[i].put_if_absent("ns", f"claim-{c}", i):
                wins.append(c)

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(wins) == list(range(10))


def test_delete_if_equal_counter_loses_no_update(dynamodb_store_uri: str) -> None:
    stores = [open_store(dynamodb_store_uri, "job") for _ in range(4)]
    stores[0].put("ns", "counter", {"n": 0})
    done = [0] * len(stores)
    errors: list[str] = []

    def bump(i: int) -> None:
        while done[i] < 10:
            current = stores[i].get("ns", "counter")
            if current is not None and stores[i].delete_if_equal("ns", "counter", current):
                if not stores[i].put_if_absent("ns", "counter", {"n": current["n"] + 1}):
                    errors.append(f"taken after deleting {current}")
                done[i] += 1

    threads = [threading.Thread(target=bump, args=(i,)) for i in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == [] and stores[0].get("ns", "counter") == {"n": 40}


def test_delete_if_equal_never_removes_a_newer_value(dynamodb_store_uri: str) -> None:
    """The read-compare-delete is guarded by the raw text: a write between read and delete wins."""
    store = open_store(dynamodb_store_uri, "job")
    store.put("ns", "k", {"v": 1})
    other = open_store(dynamodb_store_uri, "job")
    original = store._client.delete_item

    def delete_after_a_concurrent_put(**kwargs):
        other.put("ns", "k", {"v": 2})  # lands between our read and our conditional delete
        store._client.delete_item = original  # type: ignore[method-assign]
        return original(**kwargs)

    store._client.delete_item = delete_after_a_concurrent_put  # type: ignore[method-assign]
    assert store.delete_if_equal("ns", "k", {"v": 1}) is False
    assert store.get("ns", "k") == {"v": 2}


def test_moto_server_fixture_sets_dummy_credentials(moto_server: str) -> None:
    import os

    if os.environ.get("SAMZA_TEST_KINESIS_ENDPOINT"):
        assert moto_server == os.environ["SAMZA_TEST_KINESIS_ENDPOINT"].strip()
    else:
        assert moto_server.startswith("http://127.0.0.1:")
        assert os.environ["AWS_ACCESS_KEY_ID"] == "testing" and os.environ["AWS_SECRET_ACCESS_KEY"] == "testing"
        assert "127.0.0.1" in os.environ["NO_PROXY"] and "AWS_PROFILE" not in os.environ


def test_dynamodb_store_uri_is_unique_per_test(dynamodb_store_uri: str, moto_server: str) -> None:
    assert dynamodb_store_uri.startswith("dynamodb://samza-meta-") and f"endpoint={moto_server}" in dynamodb_store_uri
    with pytest.raises(ConfigError):
        open_store(dynamodb_store_uri + "&bogus=1", "job")


def test_store_pickles_as_its_configuration(dynamodb_store_uri: str) -> None:
    import pickle

    store = open_store(dynamodb_store_uri, "job")
    store.put("ns", "k", {"v": 1})
    clone = pickle.loads(pickle.dumps(store))
    assert clone is not store and clone.uri == store.uri and clone.get("ns", "k") == {"v": 1}
