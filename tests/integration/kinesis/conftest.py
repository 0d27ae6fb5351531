"""Fixtures of the samza-kinesis integration tests: a boto3 Kinesis client and streams made per test (the live-query
harness ``ks`` and ``kinesis_endpoint`` come from the development kit's pytest plugin).

Kinesis is moto in server mode unless a test (or a module, through ``pytestmark``) is marked
``pytest.mark.both_emulators``: then it runs on moto and on kinesalite (``[moto]`` / ``[kinesalite]``). A test also
marked ``pytest.mark.kinesis_mock_too`` runs on kinesis-mock as well (``[kinesis-mock]``, through the devkit's
bridge, which makes it behave as AWS documents where it does not: ``docs/kinesis-emulators.md``). kinesis-mock is
opt-in per test, not per module, because each case it runs costs suite time and the point is a representative
subset of the polling tests (reads, resharding, startpoints) on a third, independent implementation.
``pytest.mark.emulators("kinesalite", ...)`` names a test's emulators outright: for a check only some of them can
make, because the others depart from AWS there (each departure is in ``docs/kinesis-emulators.md``).

DynamoDB (lease tables) is always moto's."""

from __future__ import annotations

import pytest

from samza_devkit import kinesis_helpers as kh

EMULATORS = ["moto", "kinesalite"]
KINESIS_MOCK = "kinesis-mock"


def pytest_configure(config):
    config.addinivalue_line("markers", "both_emulators: run on moto and on kinesalite (Kinesis tests)")
    config.addinivalue_line("markers", "emulators(*names): run on exactly these emulators (Kinesis tests)")
    config.addinivalue_line("markers", "kinesis_mock_too: run on kinesis-mock (behind the devkit's bridge) as well "
                                       "as on moto, or on moto and kinesalite with both_emulators (Kinesis tests)")


def emulators_of(definition) -> list[str]:
    """The emulators a test runs on, from its markers (moto alone when it has none)."""
    named = definition.get_closest_marker("emulators")
    if named is not None:
        return list(named.args)
    chosen = list(EMULATORS) if definition.get_closest_marker("both_emulators") else ["moto"]
    if definition.get_closest_marker("kinesis_mock_too"):
        chosen.append(KINESIS_MOCK)
    return chosen


def pytest_generate_tests(metafunc):
    chosen = emulators_of(metafunc.definition)
    if chosen != ["moto"] and "kinesis_endpoint" in metafunc.fixturenames:
        metafunc.parametrize("kinesis_endpoint", chosen, indirect=True)


@pytest.fixture
def emulator(request, kinesis_endpoint):
    """``"moto"``, ``"kinesalite"`` or ``"kinesis-mock"``: the emulator behind ``kinesis_endpoint``."""
    callspec = getattr(request.node, "callspec", None)
    return callspec.params.get("kinesis_endpoint", "moto") if callspec else "moto"


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
