"""``s3://`` metadata-store URIs: what they name, what they refuse, and that no I/O happens before the first call.

The store itself (conditional writes, probe, concurrency) is tested on moto's S3 server in
``tests/integration/metadata/``."""

from __future__ import annotations

import pickle

import pytest

from spark_samza_source.core.errors import ConfigError
from spark_samza_source.metadata import S3MetadataStore, check_store_uri, open_store
from spark_samza_source.metadata.s3 import parse_s3_uri


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("s3://bucket", {"bucket": "bucket", "prefix": ""}),
        ("s3://bucket/", {"bucket": "bucket", "prefix": ""}),
        ("s3://bucket/a/b/?region=eu-west-1", {"bucket": "bucket", "prefix": "a/b", "region": "eu-west-1"}),
        ("s3://bucket/samza?endpoint=http://minio:9000&addressing_style=virtual",
         {"bucket": "bucket", "prefix": "samza", "endpoint": "http://minio:9000", "addressing_style": "virtual"}),
        ("s3://bucket/p?endpoint_override=127.0.0.1:9000&scheme=http",  # pyarrow's names, as before
         {"bucket": "bucket", "prefix": "p", "endpoint": "http://127.0.0.1:9000"}),
        ("s3://bucket/p?endpoint_override=s3.example.com", {"bucket": "bucket", "prefix": "p",
                                                             "endpoint": "https://s3.example.com"}),
        ("s3://AKIA:se%2Fcret@bucket/p", {"bucket": "bucket", "prefix": "p", "access_key": "AKIA",
                                          "secret_key": "se/cret"}),
        ("s3://AKIA:wJalr/K7MD+bP@bucket/p", {"bucket": "bucket", "prefix": "p", "access_key": "AKIA",
                                              "secret_key": "wJalr/K7MD+bP"}),  # '/' in a secret, unencoded
        ("s3://bucket/p?aws_access_key_id=A&aws_secret_access_key=S&aws_session_token=T&profile=dev&max_attempts=3",
         {"bucket": "bucket", "prefix": "p", "access_key": "A", "secret_key": "S", "session_token": "T",
          "profile": "dev", "max_attempts": 3}),
        ("s3://bucket/user@host/x", {"bucket": "bucket", "prefix": "user@host/x"}),
        ("s3://bucket/a%20b", {"bucket": "bucket", "prefix": "a b"}),
    ],
)
def test_what_a_uri_names(uri: str, expected: dict) -> None:
    assert parse_s3_uri(uri) == expected
    check_store_uri(uri)


@pytest.mark.parametrize(
    ("uri", "fragment"),
    [
        ("s3://bucket/p?regoin=eu-west-1", "unknown parameter 'regoin'"),
        ("s3://bucket/p?endpoint=minio:9000", "must be an http:// or https:// URL"),
        ("s3://bucket/p?endpoint=http://minio:9000/path", "must be an http:// or https:// URL"),
        ("s3://bucket/p?endpoint=http://a:1&endpoint_override=b:2", "not both"),
        ("s3://bucket/p?endpoint_override=b:2&scheme=ftp", "scheme must be http or https"),
        ("s3://bucket/p?max_attempts=0", "max_attempts must be an integer from 1 to 20"),
        ("s3://bucket/p?addressing_style=sideways", "addressing_style must be one of path, virtual, auto"),
        ("s3://bucket/p?access_key=AKIA", "give both access_key and secret_key"),
        ("s3://bucket/p#frag", "no '#' part"),
        ("s3://bucket/a//b", "empty segment"),
        ("s3://bu*ket/p", "not an S3 bucket name"),
        ("s3://", "the bucket is missing"),
    ],
)
def test_what_a_uri_is_refused_for(uri: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match="metadata.store") as info:
        check_store_uri(uri)
    assert fragment in str(info.value)


def test_an_endpoint_means_path_style_addressing_and_no_io_happens_before_the_first_call() -> None:
    store = open_store("s3://bucket/samza?endpoint=http://127.0.0.1:9&region=eu-west-1&access_key=AK&secret_key=SK",
                       "job")
    assert isinstance(store, S3MetadataStore)
    assert store._client.meta.config.s3["addressing_style"] == "path"  # MinIO and most S3-compatible stores
    assert store._client.meta.region_name == "eu-west-1"
    aws = open_store("s3://bucket/samza?region=eu-west-1", "job")
    assert aws._client.meta.config.s3["addressing_style"] == "auto"
    assert aws._object_key("startpoints", "Partition 3") == "samza/job/startpoints/Partition%203.json"
    assert open_store("s3://bucket", "job")._object_key("owner", "driver") == "job/owner/driver.json"


def test_a_store_pickles_as_its_arguments() -> None:
    store = open_store("s3://AK:SK@bucket/samza?endpoint=http://127.0.0.1:9", "job")
    copy = pickle.loads(pickle.dumps(store))
    assert isinstance(copy, S3MetadataStore) and copy.uri == store.uri == "s3://***@bucket/samza?endpoint=http://127.0.0.1:9"
    assert copy._client.meta.endpoint_url == "http://127.0.0.1:9" and copy.prefix == "samza"
