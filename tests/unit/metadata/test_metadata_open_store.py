"""open_store: every supported URI form, clear ConfigErrors for the rest, and no credentials anywhere."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from spark_samza_source.core.errors import ConfigError, MetadataStoreError
from spark_samza_source.metadata import (
    SUPPORTED_FORMS,
    DynamoDBMetadataStore,
    FileSystemMetadataStore,
    MemoryMetadataStore,
    S3MetadataStore,
    open_store,
)


def test_memory_forms_share_data_by_name() -> None:
    a = open_store("memory:open-store-test", "job")
    b = open_store("memory://open-store-test", "job")
    anonymous = open_store("memory:", "job")
    assert isinstance(a, MemoryMetadataStore) and a.uri == "memory:open-store-test"
    a.put("ns", "k", 1)
    assert b.get("ns", "k") == 1
    assert anonymous.get("ns", "k") is None


def test_file_uri_and_plain_paths(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    by_uri = open_store((tmp_path / "a dir").as_uri(), "job")
    assert isinstance(by_uri, FileSystemMetadataStore)
    assert by_uri.root == str(tmp_path / "a dir") and by_uri.uri == (tmp_path / "a dir").as_uri()
    relative = open_store("rel/store", "job")
    assert relative.root == str(tmp_path / "rel" / "store")  # relative -> absolute, against the cwd
    relative.put("ns", "k", "v")
    assert (tmp_path / "rel" / "store" / "job" / "ns" / "k.json").is_file()
    assert open_store(str(tmp_path / "rel" / "store"), "job").get("ns", "k") == "v"
    assert open_store(f"file://localhost{tmp_path}/rel/store", "job").get("ns", "k") == "v"
    assert open_store("file:rel/store", "job").root == str(tmp_path / "rel" / "store")


@pytest.mark.parametrize("uri", ["file://otherhost/x", "file:///x?y=1", "file://"])
def test_bad_file_uris(uri: str) -> None:
    with pytest.raises(ConfigError, match="metadata.store"):
        open_store(uri, "job")


def test_unknown_scheme_names_option_scheme_and_forms_without_secrets() -> None:
    with pytest.raises(ConfigError) as info:
        open_store("redis://admin:hunter2secret@cache:6379/0?token=T0KEN", "job")
    message = str(info.value)
    assert "metadata.store" in message and "'redis'" in message and SUPPORTED_FORMS in message
    assert "dynamodb://TABLE" in message and "file:///" in message and "s3://" in message
    assert "hunter2secret" not in message and "T0KEN" not in message and "admin" not in message


@pytest.mark.parametrize("uri", ["", "   ", None])
def test_empty_uri(uri) -> None:
    with pytest.raises(ConfigError, match="metadata.store is empty"):
        open_store(uri, "job")


def test_job_name_is_validated_before_anything_else() -> None:
    with pytest.raises(ConfigError, match="job.name"):
        open_store("redis://x", "../escape")


def test_mock_object_store_goes_through_pyarrow() -> None:
    store = open_store("mock:///bucket/prefix", "job")
    assert isinstance(store, FileSystemMetadataStore) and store.atomic_conditionals is False
    store.put("ns", "k", {"v": 1})
    assert store.get("ns", "k") == {"v": 1} and store.list("ns") == {"k": {"v": 1}}


def test_s3_credentials_stay_out_of_store_uri_and_errors(caplog) -> None:
    caplog.set_level(logging.DEBUG)
    store = open_store("s3://AKIAEXAMPLE:Sup3rS3cret%2Fkey@bucket/prefix?region=us-east-1"
                       "&endpoint_override=127.0.0.1:9&scheme=http", "job")
    assert isinstance(store, S3MetadataStore)
    assert store.uri == "s3://***@bucket/prefix?region=us-east-1&endpoint_override=127.0.0.1:9&scheme=http"
    assert store._client.meta.endpoint_url == "http://127.0.0.1:9"
    with pytest.raises(ConfigError) as info:  # a misspelt parameter: the message repeats the (redacted) URI
        open_store("s3://AKIAEXAMPLE:Sup3rS3cret@bucket/p?region=us-east-1&secret_key=An0therS3cret&regoin=x", "job")
    with pytest.raises(MetadataStoreError) as unreachable:  # nothing listens on port 9: the error names the store
        S3MetadataStore.from_uri("s3://bucket/p?endpoint=http://127.0.0.1:9&max_attempts=1&access_key=AKIAEXAMPLE"
                                 "&secret_key=Sup3rS3cret", "job").get("ns", "k")
    ours = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("spark_samza_source"))
    text = str(info.value) + str(unreachable.value) + ours  # (botocore's own DEBUG lines show the key id)
    assert "opened metadata store s3://***@bucket/prefix" in ours
    for secret in ("Sup3rS3cret", "An0therS3cret", "AKIAEXAMPLE"):
        assert secret not in text
    assert "unknown parameter 'regoin'" in str(info.value) and "secret_key=***" in str(info.value)
    assert "get failed for key 'k'" in str(unreachable.value) and "s3://bucket/p?" in str(unreachable.value)


def test_dynamodb_uri_builds_a_client_without_network(monkeypatch) -> None:
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    store = open_store("dynamodb://samza-meta?region=eu-west-1&endpointUrl=http://127.0.0.1:9"
                       "&aws_access_key_id=AKIAEXAMPLE&aws_secret_access_key=Sup3rS3cret", "job")
    assert isinstance(store, DynamoDBMetadataStore)
    assert store.table == "samza-meta" and store.region == "eu-west-1"
    assert store._client.meta.endpoint_url == "http://127.0.0.1:9"
    assert "Sup3rS3cret" not in store.uri and "AKIAEXAMPLE" not in store.uri
    assert store.uri.startswith("dynamodb://samza-meta?region=eu-west-1&endpointUrl=http://127.0.0.1:9")
    store.close()


@pytest.mark.parametrize(
    ("uri", "fragment"),
    [
        ("dynamodb://ab?region=x", "table name"),
        ("dynamodb://table/extra?region=x", "nothing may follow"),
        ("dynamodb://AKIA:Sup3rS3cret@table?region=x", "credentials do not go before"),
        ("dynamodb://table?regoin=x", "unknown parameter 'regoin'"),
        ("dynamodb://table?region=x&endpoint=127.0.0.1:5000", "http:// or https://"),
        ("dynamodb://table?region=x&aws_access_key_id=AKIA", "give both"),
        ("dynamodb://table?region=x&create_table=maybe", "create_table must be"),
        ("dynamodb://table?region=x&max_attempts=0", "max_attempts must be"),
    ],
)
def test_bad_dynamodb_uris(uri: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        open_store(uri, "job")
    message = str(info.value)
    assert fragment in message and "metadata.store" in message and "Sup3rS3cret" not in message


def test_dynamodb_without_region_says_how_to_fix(monkeypatch, tmp_path) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    with pytest.raises(ConfigError, match=r"region=REGION"):
        open_store("dynamodb://samza-meta", "job")


def test_file_and_memory_stores_do_not_import_boto3(tmp_path) -> None:
    code = ("import sys; from spark_samza_source.metadata import open_store; open_store('memory:', 'j'); "
            f"open_store({str(tmp_path)!r}, 'j').put('ns', 'k', 1); print(sorted(m for m in sys.modules "
            "if m.split('.')[0] in ('boto3', 'botocore')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
