"""pytest fixtures for AWS parts (Kinesis, DynamoDB, S3): moto in server mode on loopback.

- ``moto_server`` (session): the endpoint URL (``http://127.0.0.1:PORT``) of a moto server running in a child
  process (see ``moto_server.py``); while it is active the environment carries dummy credentials
  (``AWS_ACCESS_KEY_ID=testing`` ...), a default region and ``NO_PROXY`` for loopback, so plain boto3/pyarrow
  clients given ``endpoint_url`` just work. When ``SAMZA_TEST_KINESIS_ENDPOINT`` is set, that endpoint is
  yielded instead and the environment (real credentials) is left alone.
- ``aws_region``: the region to use in tests (``AWS_DEFAULT_REGION`` or ``us-east-1``).
- ``dynamodb_store_uri`` (function): ``dynamodb://<unique table>?region=..&endpoint=..`` for a fresh table,
  deleted again after the test (so a real endpoint is left clean).
- ``aws_faults`` (function): :class:`~samza_devkit.aws_faults.AwsFaults` of the moto server: AWS errors (throttling,
  5xx) answered by the server over HTTP, and requests counted there; every rule is cleared after the test.
  Skipped against an external endpoint (``SAMZA_TEST_KINESIS_ENDPOINT``), which cannot be told to fail.
- ``kinesalite_server``: the endpoint of kinesalite (npm; ``kinesalite_process``, session-scoped, runs it), a
  second, independent Kinesis emulator, installed into a cache directory on first use (see ``kinesalite.py``);
  skipped, with the reason, where npm or node is missing. Kinesis only: DynamoDB stays on ``moto_server``.

Note for Spark tests: Python workers inherit the environment of the JVM, which is fixed when the SparkSession
starts; pass endpoint and credentials to sources as options rather than relying on this environment.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

# fixtures only: the plugin star-imports this
__all__ = ["moto_server", "aws_region", "dynamodb_store_uri", "drop_dynamodb_table", "kinesalite_process",
           "kinesalite_server", "aws_faults"]

#: environment the moto_server fixture sets for its lifetime (AWS_PROFILE is removed)
DUMMY_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
}
_ENDPOINT_ENV = "SAMZA_TEST_KINESIS_ENDPOINT"


def unique_aws_name(prefix: str = "samza-test") -> str:
    """A name unique per call, valid for DynamoDB tables, Kinesis streams and S3 buckets (lowercase, <= 63)."""
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    external = os.environ.get(_ENDPOINT_ENV, "").strip()
    if external:
        yield external
        return
    from .moto_server import MotoServerProcess

    with pytest.MonkeyPatch.context() as mp:
        for name, value in DUMMY_AWS_ENV.items():
            mp.setenv(name, value)
        mp.delenv("AWS_PROFILE", raising=False)
        no_proxy = ",".join(filter(None, [os.environ.get("NO_PROXY", ""), "127.0.0.1", "localhost"]))
        mp.setenv("NO_PROXY", no_proxy)
        mp.setenv("no_proxy", no_proxy)
        server = MotoServerProcess()
        endpoint = server.start()
        try:
            yield endpoint
        finally:
            server.stop()


@pytest.fixture
def aws_region(moto_server: str) -> str:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"


@pytest.fixture
def dynamodb_store_uri(moto_server: str, aws_region: str) -> Iterator[str]:
    table = unique_aws_name("samza-meta")
    yield f"dynamodb://{table}?region={aws_region}&endpoint={moto_server}"
    drop_dynamodb_table(moto_server, aws_region, table)


def drop_dynamodb_table(endpoint: str, region: str, table: str) -> None:
    """Delete ``table`` at ``endpoint`` if a test's store created it (a store creates its table on first use)."""
    import boto3

    client = boto3.client("dynamodb", region_name=region, endpoint_url=endpoint)
    try:
        client.delete_table(TableName=table)
    except client.exceptions.ResourceNotFoundException:
        pass
    finally:
        client.close()


@pytest.fixture(scope="session")
def kinesalite_process(moto_server: str) -> Iterator[object]:
    """The kinesalite child process of this test session (the dummy AWS environment of ``moto_server`` applies)."""
    from .kinesalite import KinesaliteNotAvailable, KinesaliteProcess, ensure_kinesalite

    try:
        modules = ensure_kinesalite()
    except KinesaliteNotAvailable as err:
        pytest.skip(f"kinesalite (the second Kinesis emulator) cannot be installed: {err}")
    process = KinesaliteProcess(modules=modules)
    process.start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def kinesalite_server(kinesalite_process) -> str:
    """kinesalite's endpoint. A kinesalite that died since the last test (seen twice in many suite runs, cause not
    known yet) is started again on the same port, with a warning naming its exit code and its standard error's
    file: the emulator is test infrastructure, and the tests after it should not fail on its absence."""
    code = kinesalite_process.exit_code
    if code is not None:
        import warnings

        warnings.warn(f"kinesalite had exited with code {code} (its stderr: {kinesalite_process.stderr_path}); "
                      "started again on the same port", stacklevel=1)
        kinesalite_process.port = int(kinesalite_process.endpoint.rsplit(":", 1)[1])
        kinesalite_process.start()
    return kinesalite_process.endpoint


@pytest.fixture
def aws_faults(moto_server: str) -> Iterator[object]:
    if os.environ.get(_ENDPOINT_ENV, "").strip():
        pytest.skip("server-side fault injection needs the devkit's moto server, not an external endpoint")
    from .aws_faults import AwsFaults

    faults = AwsFaults(moto_server)
    faults.clear()
    try:
        yield faults
    finally:
        faults.clear()
