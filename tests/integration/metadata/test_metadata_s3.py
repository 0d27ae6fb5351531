"""What only the ``s3://`` store has: its probe, lost replies of conditional writes, the layout it shares with the
``file:`` store, and its errors. Every test runs on moto's S3 server (the conformance and concurrency suites cover
the MetadataStore contract on it)."""

from __future__ import annotations

import json
import urllib.parse

import boto3
import pytest

from samza_devkit.s3_fixtures import drop_s3_bucket, make_s3_bucket, s3_uri
from samza_devkit.s3_without_conditionals import S3WithoutConditionals
from spark_samza_source.core.errors import MetadataStoreError
from spark_samza_source.metadata import S3MetadataStore, open_store

NS = "startpoints"


def _bucket_and_prefix(uri: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(uri)
    return parts.netloc, parts.path.strip("/")


@pytest.fixture
def s3(moto_server, aws_region):
    client = boto3.client("s3", region_name=aws_region, endpoint_url=moto_server)
    yield client
    client.close()


def test_a_conditional_write_whose_reply_was_lost_is_still_won(moto_server, aws_region) -> None:
    """botocore re-sends a PutObject whose reply was lost (500 after the write); the retry meets 412 on our own
    object, which must count as won, not as someone else's (the job lease would otherwise refuse its own driver,
    or a renewal would count as lost)."""
    bucket = make_s3_bucket(moto_server, aws_region)
    try:
        with S3WithoutConditionals(moto_server, "lose-first-reply") as endpoint:
            store = open_store(s3_uri(bucket, endpoint, aws_region), "job")
            assert store.put_if_absent(NS, "k", {"first": True}) is True
            assert store.put_if_absent(NS, "k", {"second": True}) is False
            assert store.get(NS, "k") == {"first": True} and store.atomic_conditionals is True
            assert store.put_if_absent(NS, "other", 1) is True  # every first conditional PUT lost its reply
            # compare-and-set: the first If-Match PUT on "cas" lands and loses its reply, its retry meets 412
            store.put(NS, "cas", {"n": 1})
            assert store.replace_if_equal(NS, "cas", {"n": 1}, {"n": 2}) is True
            assert store.get(NS, "cas") == {"n": 2}
            assert store.replace_if_equal(NS, "cas", {"n": 1}, {"n": 3}) is False  # a stale compare still loses
    finally:
        drop_s3_bucket(moto_server, aws_region, bucket)


def test_the_layout_is_the_file_stores_so_older_s3_prefixes_read_as_is(s3_store_uri, s3) -> None:
    bucket, prefix = _bucket_and_prefix(s3_store_uri)
    # as pyarrow's s3:// store wrote it (no "writer" field), and a long key under its hashed name
    old = {"format": 1, "key": "Partition 3", "value": {"offset": "42"}}
    s3.put_object(Bucket=bucket, Key=f"{prefix}/job/{NS}/Partition%203.json", Body=json.dumps(old).encode())
    s3.put_object(Bucket=bucket, Key=f"{prefix}/job/{NS}/notes.txt", Body=b"an operator's file")
    store = open_store(s3_store_uri, "job")
    assert store.get(NS, "Partition 3") == {"offset": "42"}
    store.put(NS, "x" * 300, 1)
    assert store.list(NS) == {"Partition 3": {"offset": "42"}, "x" * 300: 1}
    names = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/job/{NS}/")["Contents"])
    assert names[0].startswith(f"{prefix}/job/{NS}/!") and names[1:] == [
        f"{prefix}/job/{NS}/Partition%203.json", f"{prefix}/job/{NS}/notes.txt"]


def test_a_corrupt_object_fails_naming_the_key_and_the_object(s3_store_uri, s3) -> None:
    bucket, prefix = _bucket_and_prefix(s3_store_uri)
    s3.put_object(Bucket=bucket, Key=f"{prefix}/job/{NS}/k.json", Body=b"{not json")
    store = open_store(s3_store_uri, "job")
    for call in (lambda: store.get(NS, "k"), lambda: store.list(NS), lambda: store.delete_if_equal(NS, "k", 1)):
        with pytest.raises(MetadataStoreError, match=rf"corrupt value for key 'k' .* s3://{bucket}/{prefix}/job/"):
            call()


def test_a_missing_bucket_fails_naming_it_and_the_fix(moto_server, aws_region) -> None:
    store = S3MetadataStore.from_uri(s3_uri("no-such-bucket-here", moto_server, aws_region), "job")
    for call in (lambda: store.get(NS, "k"), lambda: store.put_if_absent(NS, "k", 1), lambda: store.list(NS)):
        with pytest.raises(MetadataStoreError, match="Create bucket 'no-such-bucket-here' or name an existing one in "
                                                     "metadata.store") as info:
            call()
        assert "secret_key=***" in str(info.value) and "testing" not in str(info.value)
