"""Fixtures of the samza-kinesis integration tests: a boto3 Kinesis client and streams made per test (the live-query
harness ``ks`` and ``kinesis_endpoint`` come from the development kit's pytest plugin).

Kinesis is moto in server mode unless a test (or a module, through ``pytestmark``) is marked
``pytest.mark.both_emulators``: then it runs on moto and on kinesalite (``[moto]`` / ``[kinesalite]``).

DynamoDB (lease tables) is always moto's."""

from __future__ import annotations

import pytest

from samza_devkit import kinesis_helpers as kh

EMULATORS = ["moto", "kinesalite"]


def pytest_configure(config):
    config.addinivalue_line("markers", "both_emulators: run on moto and on kinesalite (Kinesis tests)")


def pytest_generate_tests(metafunc):
    if metafunc.definition.get_closest_marker("both_emulators") and "kinesis_endpoint" in metafunc.fixturenames:
        metafunc.parametrize("kinesis_endpoint", EMULATORS, indirect=True)


@pytest.fixture
def emulator(kinesis_endpoint, moto_server):
    """``"moto"`` or ``"kinesalite"``: the emulator behind ``kinesis_endpoint``."""
    return "moto" if kinesis_endpoint == moto_server else "kinesalite"


@pytest.fixture
def kinesis(kinesis_endpoint, aws_region):
    """A plain boto3 Kinesis client on the test endpoint, as an application would make it."""
    client = kh.kinesis_client(kinesis_endpoint, aws_region)
    yield client
    client.close()


@pytest.fixture
def make_stream(kinesis):
    """``make_stream(shards=1)`` -> the name of a new ACTIVE stream, deleted after the test."""
    created = []

    def make(shards: int = 1) -> str:
        name = kh.create_stream(kinesis, kh.unique_stream_name("it"), shards)
        created.append(name)
        return name

    yield make
    for name in created:
        kh.delete_stream(kinesis, name)
