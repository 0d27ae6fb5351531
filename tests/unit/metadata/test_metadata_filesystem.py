"""FileSystemMetadataStore: layout, key encoding, envelopes, and errors that name the store and the key."""

from __future__ import annotations

import json
import logging
import os
import shutil
import string
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_samza_source.core.errors import FormatVersionError, MetadataStoreError
from spark_samza_source.metadata import FileSystemMetadataStore, open_store
from spark_samza_source.metadata.filesystem import MAX_ENCODED_NAME, decode_name, encode_key, hashed_name

_NAME_CHARS = set(string.ascii_letters + string.digits + "-_.~,=@%")
_valid_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=200)  # no lone surrogates


@given(_valid_text)
def test_key_encoding_is_reversible_and_filesystem_safe(key: str) -> None:
    stem = encode_key(key)
    assert len((stem + ".json").encode()) <= 255
    assert not stem.startswith(".")
    if stem.startswith("!"):
        assert stem == hashed_name(key) and (len(stem) == 65)
        assert decode_name(stem) is None
    else:
        assert set(stem) <= _NAME_CHARS and len(stem) <= MAX_ENCODED_NAME
        assert decode_name(stem) == key


@given(_valid_text, _valid_text)
def test_distinct_keys_get_distinct_names(a: str, b: str) -> None:
    if a != b:
        assert encode_key(a) != encode_key(b)


@pytest.mark.parametrize(
    ("key", "stem"),
    [("Partition 3", "Partition%203"), ("a/b", "a%2Fb"), ("100%", "100%25"), (".hidden", "%2Ehidden"),
     ("..", "%2E."), ("a.b", "a.b"), ("ü", "%C3%BC"), ("!x", "%21x")],
)
def test_readable_names(key: str, stem: str) -> None:
    assert encode_key(key) == stem


def test_names_this_store_did_not_write_are_not_decoded() -> None:
    for stem in ("a b", "a%2fb", "%zz", "%C3", "!short", "x/y"):
        assert decode_name(stem) is None


@pytest.fixture
def root(tmp_path):
    return tmp_path / "store"


@pytest.fixture
def store(root) -> FileSystemMetadataStore:
    return open_store(f"file://{root}", "orders-enricher")


def test_layout_and_envelope(store, root) -> None:
    store.put("startpoints", "SystemStreamPartition [kafka, orders, 3]", {"@type": "Oldest"})
    path = root / "orders-enricher" / "startpoints" / "SystemStreamPartition%20%5Bkafka,%20orders,%203%5D.json"
    assert json.loads(path.read_text()) == {
        "format": 1, "key": "SystemStreamPartition [kafka, orders, 3]", "value": {"@type": "Oldest"}}
    assert sorted(p.name for p in path.parent.iterdir() if not p.name.startswith(".")) == [path.name]


def test_long_keys_use_a_hashed_name_and_keep_the_key_inside(store, root) -> None:
    key = "SystemStreamPartition [kafka, " + "a-very-long-topic-name" * 30 + ", 0]"
    store.put("ns", key, 1)
    (path,) = (root / "orders-enricher" / "ns").glob("!*.json")
    assert len(path.name.encode()) < 100 and json.loads(path.read_text())["key"] == key
    assert store.get("ns", key) == 1 and store.list("ns") == {key: 1}


def test_temp_lock_and_foreign_files_are_ignored(store, root, caplog) -> None:
    store.put("ns", "k", 1)
    directory = root / "orders-enricher" / "ns"
    (directory / ".tmp-deadbeef").write_text('{"format": 1, "key": "k", "val')  # a crashed writer's leftover
    (directory / "notes.txt").write_text("hello")
    (directory / "hand written.json").write_text("{}")  # not an encoding this store produces
    (directory / "subdir.json").mkdir()
    with caplog.at_level(logging.WARNING):
        assert store.list("ns") == {"k": 1}
    assert "hand written.json" in caplog.text


@pytest.mark.parametrize("content", [b"", b"{", b'{"format": 1, "key": "k", "value": ', b"\xff\xfe", b"nul\x00l"])
def test_corrupt_file_names_the_key_and_the_store(store, root, content: bytes) -> None:
    store.put("ns", "Partition 7", {"ok": True})
    (root / "orders-enricher" / "ns" / "Partition%207.json").write_bytes(content)
    for call in (lambda: store.get("ns", "Partition 7"), lambda: store.list("ns"),
                 lambda: store.delete_if_equal("ns", "Partition 7", {"ok": True})):
        with pytest.raises(MetadataStoreError) as info:
            call()
        message = str(info.value)
        assert "'Partition 7'" in message and store.uri in message and "not valid JSON" in message
    store.delete("ns", "Partition 7")  # an unconditional delete is the way out
    assert store.list("ns") == {}


@pytest.mark.parametrize("doc", [[1, 2], {"value": 1}, {"format": "1", "key": "k", "value": 1},
                                 {"format": 1, "key": 3, "value": 1}, {"format": 0, "key": "k", "value": 1}])
def test_json_that_is_not_an_envelope_is_corrupt(store, root, doc) -> None:
    store.put("ns", "k", 1)
    (root / "orders-enricher" / "ns" / "k.json").write_text(json.dumps(doc))
    with pytest.raises(MetadataStoreError, match="not a metadata envelope"):
        store.get("ns", "k")


def test_newer_format_is_refused_with_upgrade_hint(store, root) -> None:
    store.put("ns", "k", 1)
    (root / "orders-enricher" / "ns" / "k.json").write_text('{"format": 2, "key": "k", "value": 1}')
    with pytest.raises(FormatVersionError, match="upgrade spark-samza-source"):
        store.get("ns", "k")


def test_a_renamed_file_is_detected(store, root) -> None:
    store.put("ns", "a", "value of a")
    directory = root / "orders-enricher" / "ns"
    os.rename(directory / "a.json", directory / "b.json")
    with pytest.raises(MetadataStoreError, match="holds key 'a'"):
        store.get("ns", "b")
    with pytest.raises(MetadataStoreError, match="holds key 'a'"):
        store.list("ns")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), {1, 2}, b"bytes", object(), {("tuple",): 1}])
def test_values_that_are_not_json_are_refused_and_nothing_is_written(store, root, value) -> None:
    with pytest.raises(MetadataStoreError, match="not JSON"):
        store.put("ns", "k", value)
    assert store.get("ns", "k") is None and not (root / "orders-enricher" / "ns" / "k.json").exists()


def test_keys_that_are_not_unicode_text_are_refused(store) -> None:
    with pytest.raises(MetadataStoreError, match="not valid Unicode"):
        store.put("ns", "lone \udc80 surrogate", 1)


def test_root_under_a_regular_file_fails_clearly_even_as_root(tmp_path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a regular file where the store's parent should be")
    store = open_store(f"file://{blocker}/store", "orders-enricher")
    calls = {
        "put": lambda: store.put("startpoints", "Partition 1", 1),
        "put_if_absent": lambda: store.put_if_absent("startpoints", "Partition 1", 1),
        "get": lambda: store.get("startpoints", "Partition 1"),
        "delete": lambda: store.delete("startpoints", "Partition 1"),
        "delete_if_equal": lambda: store.delete_if_equal("startpoints", "Partition 1", 1),
        "list": lambda: store.list("startpoints"),
    }
    for op, call in calls.items():
        with pytest.raises(MetadataStoreError) as info:
            call()
        message = str(info.value)
        assert message.startswith(f"[SAMZA_METADATA_STORE_FAILED] {op} failed for "), message
        assert store.uri in message and "metadata.store" in message and "NotADirectoryError" in message
        if op != "list":
            assert "'Partition 1'" in message
        assert not isinstance(info.value, OSError)


def test_a_vanished_root_reads_as_empty_and_is_recreated_on_write(store, root) -> None:
    store.put("ns", "k", 1)
    shutil.rmtree(root)
    assert store.get("ns", "k") is None and store.list("ns") == {}
    assert store.delete_if_equal("ns", "k", 1) is False
    store.delete("ns", "k")
    assert store.put_if_absent("ns", "k", 2) is True
    shutil.rmtree(root)
    store.put("ns", "k", 3)
    assert store.get("ns", "k") == 3


def test_writes_leave_no_temporary_files(store, root) -> None:
    for i in range(20):
        store.put("ns", "k", i)
        store.put_if_absent("ns", f"c{i}", i)
        store.put_if_absent("ns", f"c{i}", -i)
        store.delete_if_equal("ns", f"c{i}", i)
    names = sorted(p.name for p in (root / "orders-enricher" / "ns").iterdir())
    assert names == [".lock", "k.json"]


def test_object_store_conditionals_are_best_effort_and_say_so(caplog) -> None:
    store = open_store("mock:///bucket/meta", "orders-enricher")
    assert store.atomic_conditionals is False and store.uri == "mock:///bucket/meta"
    with caplog.at_level(logging.WARNING):
        assert store.put_if_absent("ns", "k", 1) is True
        assert store.put_if_absent("ns", "k", 2) is False
        assert store.delete_if_equal("ns", "k", 1) is True
    warnings = [r for r in caplog.records if "best-effort" in r.getMessage()]
    assert len(warnings) == 1 and "mock:///bucket/meta" in warnings[0].getMessage()


def test_local_store_claims_atomic_conditionals(store) -> None:
    assert store.atomic_conditionals is True


def test_direct_construction_has_a_credential_free_uri(tmp_path) -> None:
    from pyarrow import fs as pafs

    store = FileSystemMetadataStore(pafs.LocalFileSystem(), str(tmp_path / "x y"), "job")
    assert store.uri == f"file://{tmp_path}/x%20y"


def test_list_sweeps_stale_temporary_files_only(store, root) -> None:
    store.put("ns", "k", 1)
    directory = root / "orders-enricher" / "ns"
    stale, fresh = directory / ".tmp-stale", directory / ".tmp-fresh"
    stale.write_text("half a value")
    fresh.write_text("a write in progress")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    assert store.list("ns") == {"k": 1}
    assert not stale.exists() and fresh.exists()


def test_object_store_path_round_trips_on_one_instance() -> None:
    """The pyarrow (non-local) code path: temp file + move, overwrite, hashed names, delete."""
    store = open_store("mock:///bucket/meta", "orders-enricher")
    long_key = "k" * 500
    store.put("ns", "a/b", 1)
    store.put("ns", "a/b", 2)  # move onto an existing object
    store.put("ns", long_key, {"long": True})
    store.put("other", "a/b", "other namespace")
    assert store.get("ns", "a/b") == 2 and store.get("ns", long_key) == {"long": True}
    assert store.list("ns") == {"a/b": 2, long_key: {"long": True}}
    store.delete("ns", "a/b")
    store.delete("ns", "a/b")
    assert store.delete_if_equal("ns", long_key, {"long": False}) is False
    assert store.delete_if_equal("ns", long_key, {"long": True}) is True
    assert store.list("ns") == {} and store.list("other") == {"a/b": "other namespace"}


def test_file_store_pickles(store) -> None:
    import pickle

    store.put("ns", "k", [1])
    clone = pickle.loads(pickle.dumps(store))
    assert clone.uri == store.uri and clone.get("ns", "k") == [1]
