"""One MetadataStore contract, checked against every backend: memory, file, DynamoDB (moto) and S3 (boto3 on moto's
S3 server, ``s3_store_uri`` from the devkit), and S3 once more behind a proxy that ignores conditional writes
(``s3-best-effort``: an S3-compatible store without them, where the store falls back to check-then-act, which must
still keep the contract for a single writer).

``MemoryMetadataStore`` is the reference semantics; every other store must be indistinguishable from it
through the MetadataStore API.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest

from samza_devkit.s3_fixtures import drop_s3_bucket, make_s3_bucket, s3_uri
from samza_devkit.s3_without_conditionals import S3WithoutConditionals
from spark_samza_source.core.errors import ConfigError, InternalError
from spark_samza_source.metadata import MetadataStore, open_store

BACKENDS = ["memory", "file", "dynamodb", "s3", "s3-best-effort"]

NS = "startpoints"


@pytest.fixture(params=BACKENDS)
def store_uri(request: pytest.FixtureRequest, tmp_path) -> str:
    kind = request.param
    if kind == "memory":
        return f"memory:conformance-{uuid.uuid4().hex}"
    if kind == "file":
        return (tmp_path / "metadata store").as_uri()  # a space in the root, percent-encoded in the URI
    if kind == "dynamodb":
        return request.getfixturevalue("dynamodb_store_uri")
    if kind == "s3-best-effort":
        return request.getfixturevalue("s3_best_effort_uri")
    return request.getfixturevalue("s3_store_uri")


@pytest.fixture
def s3_best_effort_uri(moto_server: str, aws_region: str) -> Iterator[str]:
    bucket = make_s3_bucket(moto_server, aws_region)
    with S3WithoutConditionals(moto_server, "ignore") as endpoint:
        uri = s3_uri(bucket, endpoint, aws_region)
        assert open_store(uri, "probe-first").atomic_conditionals is False
        yield uri
    drop_s3_bucket(moto_server, aws_region, bucket)


@pytest.fixture
def opener(store_uri: str) -> Iterator[Callable[[str], MetadataStore]]:
    """open(job_name) -> a store on the SAME underlying location; every store opened is closed afterwards."""
    opened: list[MetadataStore] = []

    def open_(job_name: str = "orders-enricher") -> MetadataStore:
        store = open_store(store_uri, job_name)
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.close()


@pytest.fixture
def store(opener) -> MetadataStore:
    return opener("orders-enricher")


def test_get_absent_put_get_overwrite(store: MetadataStore) -> None:
    assert store.get(NS, "Partition 0") is None
    store.put(NS, "Partition 0", {"offset": "42"})
    assert store.get(NS, "Partition 0") == {"offset": "42"}
    store.put(NS, "Partition 0", {"offset": "43", "extra": [1]})
    assert store.get(NS, "Partition 0") == {"offset": "43", "extra": [1]}
    assert store.list(NS) == {"Partition 0": {"offset": "43", "extra": [1]}}


def test_a_second_client_sees_the_same_data(opener) -> None:
    a, b = opener("orders-enricher"), opener("orders-enricher")
    a.put(NS, "k", [1, 2])
    assert b.get(NS, "k") == [1, 2]
    b.delete(NS, "k")
    assert a.get(NS, "k") is None


JSON_VALUES = [
    0, -1, 2**70, -(2**63), 1.5, -0.25, 1e300, 5e-324,
    "", "text with ü, 🎉, \u0000, \n and \"quotes\"",
    True, False, None,
    [], {}, [None, True, 1, "x", 2.5, [], {}],
    {"a": [1, {"b": [None, True, "x"]}], "c": {"d": {}}, "ü": "🎉", "": 0},
]


def test_values_of_every_json_type_round_trip(store: MetadataStore) -> None:
    expected = {f"v{i:02d}": value for i, value in enumerate(JSON_VALUES)}
    for key, value in expected.items():
        store.put(NS, key, value)
    for key, value in expected.items():
        got = store.get(NS, key)
        assert got == value and type(got) is type(value), key
    assert store.list(NS) == expected  # None is a stored value, visible in list


def test_stored_values_are_copies(store: MetadataStore) -> None:
    value = {"a": [1, 2]}
    store.put(NS, "k", value)
    value["a"].append(3)
    got = store.get(NS, "k")
    assert got == {"a": [1, 2]}
    got["a"].append(4)
    assert store.get(NS, "k") == {"a": [1, 2]}


def test_put_if_absent(store: MetadataStore) -> None:
    assert store.put_if_absent(NS, "k", {"first": True}) is True
    assert store.put_if_absent(NS, "k", {"second": True}) is False
    assert store.get(NS, "k") == {"first": True}
    assert store.put_if_absent(NS, "null", None) is True  # a stored null is present, not absent
    assert store.put_if_absent(NS, "null", 1) is False
    assert store.get(NS, "null") is None and store.list(NS) == {"k": {"first": True}, "null": None}


def test_delete_is_idempotent(store: MetadataStore) -> None:
    store.delete(NS, "never-written")
    store.delete("other-namespace", "never-written")
    store.put(NS, "k", 1)
    store.delete(NS, "k")
    assert store.get(NS, "k") is None
    store.delete(NS, "k")
    assert store.list(NS) == {}
    assert store.put_if_absent(NS, "k", 2) is True  # deleted means absent again


def test_delete_many_removes_exactly_the_keys_named(store: MetadataStore) -> None:
    """More keys than one DynamoDB BatchWriteItem takes (25), with absent, repeated and awkward ones (a key too long
    for a file name or sort key is stored under its hash): every named key goes, nothing else does."""
    long_key = "x" * 2000
    keys = [f"00000000000000000001/stream/shardId-{i:012d}" for i in range(30)] + [long_key, "a/b c%d"]
    for i, key in enumerate(keys):
        store.put(NS, key, {"end": i})
    store.put(NS, "kept", 1)
    store.put("other-namespace", keys[0], 2)
    listed = store.list(NS)  # the listing reads every one of 33 records (S3: one GET each, from a pool)
    assert listed == dict(sorted({**{key: {"end": i} for i, key in enumerate(keys)}, "kept": 1}.items()))
    store.delete_many(NS, [*keys, keys[3], "never-written"])
    assert store.list(NS) == {"kept": 1}
    assert store.get("other-namespace", keys[0]) == 2
    store.delete_many(NS, [])
    store.delete_many(NS, keys)  # deleted already: not an error
    assert store.list(NS) == {"kept": 1}
    assert store.put_if_absent(NS, long_key, 3) is True  # deleted means absent again


def test_delete_if_equal(store: MetadataStore) -> None:
    assert store.delete_if_equal(NS, "absent", {"a": 1}) is False
    store.put(NS, "k", {"a": 1, "b": [1, 2]})
    assert store.delete_if_equal(NS, "k", {"a": 1, "b": [2, 1]}) is False
    assert store.delete_if_equal(NS, "k", {"a": 1}) is False
    assert store.get(NS, "k") == {"a": 1, "b": [1, 2]}
    assert store.delete_if_equal(NS, "k", {"b": [1, 2], "a": 1}) is True  # JSON equality, not text equality
    assert store.get(NS, "k") is None
    assert store.delete_if_equal(NS, "k", {"a": 1, "b": [1, 2]}) is False
    store.put(NS, "n", None)
    assert store.delete_if_equal(NS, "n", None) is True
    assert store.list(NS) == {}


def test_list_isolates_namespaces_and_jobs(opener) -> None:
    orders, orders_v2 = opener("orders"), opener("orders-v2")  # one job name is a prefix of the other
    orders.put("startpoints", "k", "orders/startpoints")
    orders.put("startpoints-2", "k", "orders/startpoints-2")
    orders.put("jobmodel", "k", "orders/jobmodel")
    orders_v2.put("startpoints", "k", "orders-v2/startpoints")
    orders_v2.put("startpoints", "only-v2", 1)
    assert orders.list("startpoints") == {"k": "orders/startpoints"}
    assert orders.list("startpoints-2") == {"k": "orders/startpoints-2"}
    assert orders.list("jobmodel") == {"k": "orders/jobmodel"}
    assert orders_v2.list("startpoints") == {"k": "orders-v2/startpoints", "only-v2": 1}
    assert orders_v2.list("jobmodel") == {} and orders.list("checkpoints") == {}
    assert orders.get("startpoints", "only-v2") is None
    orders.delete("startpoints", "k")
    assert orders_v2.get("startpoints", "k") == "orders-v2/startpoints"
    assert orders.delete_if_equal("startpoints", "only-v2", 1) is False
    assert orders_v2.list("startpoints") == {"k": "orders-v2/startpoints", "only-v2": 1}
    assert orders.put_if_absent("startpoints", "only-v2", 2) is True  # absent for this job
    assert orders_v2.get("startpoints", "only-v2") == 1


AWKWARD_KEYS = [
    "Partition 3", "SystemStreamPartition [kafka, orders, 3]", "a b  c ", " leading space",
    ".", "..", "...", ".hidden", "a.json", "a.json.tmp", ".lock", ".tmp-0123",
    "a/b", "/", "//", "../../etc/passwd", "a\\b", "C:\\x",
    "ключ", "键", "🎉", "é", "e\u0301", "A", "a",
    "%", "%2F", "100%", "a%2Fb", "a_b", "!", "!abc", "#", "#sha256:00", "~", "=,@",
    "", "\u0000", "tab\tnew\nline\r", "\u202eright-to-left", "?query&x=1#frag", "*glob?[x]",
    "x" * 120, "x" * 121, "x" * 300, "y" * 2000, "ü" * 600, "🎉" * 300,
]


def test_replace_if_equal(store: MetadataStore) -> None:
    assert store.replace_if_equal(NS, "absent", {"a": 1}, {"a": 2}) is False
    assert store.get(NS, "absent") is None  # an absent key never matches, not even an expected None
    assert store.replace_if_equal(NS, "absent", None, 1) is False and store.list(NS) == {}
    store.put(NS, "k", {"a": 1, "b": [1, 2]})
    assert store.replace_if_equal(NS, "k", {"a": 1, "b": [2, 1]}, "no") is False
    assert store.replace_if_equal(NS, "k", {"a": 1}, "no") is False
    assert store.get(NS, "k") == {"a": 1, "b": [1, 2]}
    assert store.replace_if_equal(NS, "k", {"b": [1, 2], "a": 1}, {"v": 2}) is True  # JSON equality
    assert store.get(NS, "k") == {"v": 2}
    assert store.replace_if_equal(NS, "k", {"a": 1, "b": [1, 2]}, {"v": 3}) is False  # the old value is gone
    assert store.replace_if_equal(NS, "k", {"v": 2}, None) is True  # to a stored null: present, not absent
    assert store.put_if_absent(NS, "k", 4) is False
    assert store.replace_if_equal(NS, "k", None, {"v": 5}) is True
    assert store.list(NS) == {"k": {"v": 5}}
    store.delete(NS, "k")
    assert store.replace_if_equal(NS, "k", {"v": 5}, 6) is False and store.get(NS, "k") is None


def test_awkward_keys_are_distinct_and_round_trip(store: MetadataStore) -> None:
    expected = {key: {"i": i, "key": key} for i, key in enumerate(AWKWARD_KEYS)}
    assert len(expected) == len(AWKWARD_KEYS)
    for key, value in expected.items():
        store.put(NS, key, value)
    for key, value in expected.items():
        assert store.get(NS, key) == value, repr(key)
    listed = store.list(NS)
    assert listed == expected
    assert list(listed) == sorted(expected)  # list is ordered by key
    for key in AWKWARD_KEYS[::2]:
        assert store.delete_if_equal(NS, key, expected[key]) is True, repr(key)
    assert store.list(NS) == {k: v for k, v in expected.items() if k not in AWKWARD_KEYS[::2]}
    for key in AWKWARD_KEYS[::2]:
        assert store.put_if_absent(NS, key, "again") is True, repr(key)
        assert store.put_if_absent(NS, key, "again") is False, repr(key)


def test_non_string_keys_are_stringified(store: MetadataStore) -> None:
    store.put(NS, 3, "three")  # type: ignore[arg-type]
    assert store.get(NS, "3") == "three"
    assert store.list(NS) == {"3": "three"}


@pytest.mark.parametrize("job_name", ["", "..", "a/b", "../x", "a/../b", "a\nb", "a\x00b", "\x7f", ".hidden",
                                      "a..b", "/abs", "x" * 201, None, 42])
def test_escaping_job_names_are_refused(store_uri: str, job_name) -> None:
    with pytest.raises(ConfigError, match="job.name"):
        open_store(store_uri, job_name)


@pytest.mark.parametrize("namespace", ["", "..", "a/b", "Upper", "-x", "x" * 65, "a b", "a\x00"])
def test_bad_namespaces_are_refused(store: MetadataStore, namespace: str) -> None:
    # the namespaces are this package's own constants (options/namespaces.py), never a user's: a bad one is a bug
    for call in (lambda: store.get(namespace, "k"), lambda: store.put(namespace, "k", 1),
                 lambda: store.put_if_absent(namespace, "k", 1), lambda: store.delete(namespace, "k"),
                 lambda: store.delete_if_equal(namespace, "k", 1), lambda: store.replace_if_equal(namespace, "k", 1, 2),
                 lambda: store.list(namespace)):
        with pytest.raises(InternalError, match="namespace"):
            call()
