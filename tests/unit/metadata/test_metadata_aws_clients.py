"""Stores opened in one process with the same settings share one boto3 client (metadata/aws_clients.py)."""

from __future__ import annotations

import pytest

from spark_samza_source.metadata import open_store
from spark_samza_source.metadata.aws_clients import shared_client

S3 = "s3://ak:sk@bucket/samza?endpoint=http://127.0.0.1:9&region=eu-west-1"
DYNAMODB = "dynamodb://table?endpoint=http://127.0.0.1:9&region=eu-west-1&access_key=ak&secret_key=sk"


@pytest.mark.parametrize("uri", [S3, DYNAMODB], ids=["s3", "dynamodb"])
def test_stores_of_the_same_settings_share_a_client_and_other_settings_get_their_own(uri):
    first, second = open_store(uri, "job-a"), open_store(uri, "job-b")  # another job, the same account and place
    other_region = open_store(uri.replace("eu-west-1", "us-east-2"), "job-a")
    other_key = open_store(uri.replace("sk", "sk2"), "job-a")
    assert first._client is second._client
    assert other_region._client is not first._client and other_region._client.meta.region_name == "us-east-2"
    assert other_key._client is not first._client


def test_closing_a_store_leaves_the_shared_client_to_the_others():
    first, second = open_store(S3, "job-a"), open_store(S3, "job-b")
    first.close()
    assert second._client is first._client and second._client.meta.endpoint_url == "http://127.0.0.1:9"


def test_a_client_that_could_not_be_made_is_not_kept():
    def failing():
        raise RuntimeError("no region")

    with pytest.raises(RuntimeError, match="no region"):
        shared_client(("test", "failing-once"), failing)
    made = object()
    assert shared_client(("test", "failing-once"), lambda: made) is made
    assert shared_client(("test", "failing-once"), failing) is made  # made once per process


def test_sessions_of_other_settings_share_one_data_loader_and_keep_their_own_credentials_and_region():
    from spark_samza_source.metadata.aws_clients import boto3_session

    first = boto3_session(region_name="eu-west-1", aws_access_key_id="ak1", aws_secret_access_key="sk1")
    second = boto3_session(region_name="us-east-2", aws_access_key_id="ak2", aws_secret_access_key="sk2")
    loader = first._session.get_component("data_loader")
    assert second._session.get_component("data_loader") is loader
    assert len(loader.search_paths) == len(set(loader.search_paths))  # boto3 adds its data path once, not per session
    assert first.get_credentials().access_key == "ak1" and second.get_credentials().access_key == "ak2"
    kinesis = second.client("kinesis", endpoint_url="http://127.0.0.1:9")
    assert kinesis.meta.region_name == "us-east-2" and kinesis.meta.service_model.service_name == "kinesis"
    # a model the first session's client loaded is the loader's, not parsed again for the second
    first.client("dynamodb", endpoint_url="http://127.0.0.1:9")
    assert loader.load_service_model("dynamodb", "service-2") is loader.load_service_model("dynamodb", "service-2")
