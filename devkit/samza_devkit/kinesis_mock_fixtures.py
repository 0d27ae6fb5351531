"""pytest fixtures for kinesis-mock, the third Kinesis emulator (the one with enhanced fan-out), behind the devkit's
bridge (``kinesis_mock_bridge``), which makes it behave as AWS documents ``SubscribeToShard`` and ``ListShards``.

- ``kinesis_mock_bridge`` (session): the :class:`~samza_devkit.kinesis_mock_bridge.KinesisMockBridge` in front of a
  kinesis-mock child process (installed from the npm registry into a cache directory on first use, see
  ``kinesis_mock.py``); skipped, with the reason, where npm or node is missing. Its hooks (``cut``, the
  ``subscription_limit_s`` and ``takeover_after_s`` settings) are for tests; a test that changes a setting calls
  ``reset()`` afterwards.
- ``kinesis_mock_endpoint`` (session): the bridged endpoint (``http://127.0.0.1:PORT``), for clients.
- ``fresh_bridge`` (per test): the same bridge, its settings and its memory of earlier calls restored after the
  test, for tests that change them or count calls.

The dummy AWS environment of ``moto_server`` applies (credentials, region, ``NO_PROXY``); DynamoDB stays on moto.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

# fixtures only: the plugin star-imports this
__all__ = ["kinesis_mock_bridge", "kinesis_mock_endpoint", "fresh_bridge"]


@pytest.fixture(scope="session")
def kinesis_mock_bridge(moto_server: str) -> Iterator[object]:
    from .kinesis_mock import KinesisMockNotAvailable, KinesisMockProcess, ensure_kinesis_mock
    from .kinesis_mock_bridge import KinesisMockBridge

    try:
        modules = ensure_kinesis_mock()
    except KinesisMockNotAvailable as err:
        pytest.skip(f"kinesis-mock (the Kinesis emulator with enhanced fan-out) cannot be installed: {err}")
    with KinesisMockProcess(modules=modules) as upstream, KinesisMockBridge(upstream) as bridge:
        yield bridge


@pytest.fixture(scope="session")
def kinesis_mock_endpoint(kinesis_mock_bridge) -> str:
    return kinesis_mock_bridge.endpoint


@pytest.fixture
def fresh_bridge(kinesis_mock_bridge) -> Iterator[object]:
    yield kinesis_mock_bridge
    kinesis_mock_bridge.reset()
