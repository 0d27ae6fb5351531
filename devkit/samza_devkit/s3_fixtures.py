"""pytest fixtures for the ``s3://`` metadata store: fresh buckets on the devkit's moto server.

- ``s3_store_uri`` (function): ``s3://<unique bucket>/meta?region=..&endpoint=..`` for a fresh bucket on the
  moto server (``moto_server``), carrying the dummy credentials (Spark's Python workers may not see this
  process's environment); the bucket is emptied and deleted after the test.
- ``make_s3_bucket`` / ``drop_s3_bucket`` / ``s3_uri``: the same by hand (e.g. a bucket reached through
  ``s3_without_conditionals``' proxy).

Apart from ``aws_fixtures`` so that the S3 store's test tooling stays in one place.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .aws_fixtures import unique_aws_name

# fixtures only: the plugin star-imports this
__all__ = ["s3_store_uri"]


def make_s3_bucket(endpoint: str, region: str) -> str:
    """A new, empty bucket on ``endpoint``; its name."""
    import boto3

    bucket = unique_aws_name("samza-meta")
    client = boto3.client("s3", region_name=region, endpoint_url=endpoint)
    try:
        client.create_bucket(Bucket=bucket)
    finally:
        client.close()
    return bucket


def drop_s3_bucket(endpoint: str, region: str, bucket: str) -> None:
    """Delete every object of ``bucket``, then the bucket."""
    import boto3

    client = boto3.client("s3", region_name=region, endpoint_url=endpoint)
    try:
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            for obj in page.get("Contents", []):
                client.delete_object(Bucket=bucket, Key=obj["Key"])
        client.delete_bucket(Bucket=bucket)
    finally:
        client.close()


def s3_uri(bucket: str, endpoint: str, region: str, prefix: str = "meta") -> str:
    """The ``metadata.store`` URI of ``bucket``/``prefix`` on ``endpoint``, with the dummy credentials."""
    creds = "&access_key=testing&secret_key=testing" if endpoint.startswith("http://127.0.0.1") else ""
    return f"s3://{bucket}/{prefix}?region={region}&endpoint={endpoint}{creds}"


@pytest.fixture
def s3_store_uri(moto_server: str, aws_region: str) -> Iterator[str]:
    bucket = make_s3_bucket(moto_server, aws_region)
    yield s3_uri(bucket, moto_server, aws_region)
    drop_s3_bucket(moto_server, aws_region, bucket)
