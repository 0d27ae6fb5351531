"""pytest fixtures for Kafka: Apache Kafka itself, the development broker where only it can make a case, or a
cluster of the user's.

- ``kafka_broker`` (session): Apache Kafka (:class:`samza_devkit.apache_kafka.ApacheKafkaBroker`, one KRaft node
  fetched from Maven Central and started on loopback), or, when the environment variable
  ``SAMZA_TEST_KAFKA_BOOTSTRAP`` is set, a handle on that cluster whose ``restart()``/``stop()``/``kill()`` skip
  the test (fault control needs a broker the tests started).  Everything the tests do goes through
  ``.bootstrap_servers`` and a Kafka client.
- ``kafka_broker_fresh`` (function): an Apache Kafka node of its own with its own data dir (a few seconds to
  start), for tests that restart, kill or otherwise disturb the broker; on a user's cluster, the shared handle.
- ``dev_kafka_broker`` (session): the Kafka wire-protocol development broker
  (:class:`samza_devkit.kafka_broker.KafkaDevBroker`), for its own tests and for the cases only it can make (each
  such test says why).
- ``kafka_topic`` (function): a factory ``kafka_topic(partitions=1, config=None, prefix="t") -> name``
  that creates a uniquely named topic with confluent-kafka's AdminClient on ``kafka_broker``.
- ``kafka_topic_factory``: the same factory bound to any broker handle:
  ``kafka_topic_factory(broker)(partitions=...)``.
"""

from __future__ import annotations

import os
import uuid

import pytest

from .apache_kafka import ApacheKafkaBroker
from .kafka_broker import KafkaDevBroker
from .kafka_helpers import create_topic

__all__ = [
    "RealKafkaCluster",
    "create_topic",
    "dev_kafka_broker",
    "kafka_broker",
    "kafka_broker_fresh",
    "kafka_topic",
    "kafka_topic_factory",
]

REAL_CLUSTER_ENV = "SAMZA_TEST_KAFKA_BOOTSTRAP"
_SKIP_REASON = "needs broker fault control; SAMZA_TEST_KAFKA_BOOTSTRAP is a real cluster"


class RealKafkaCluster:
    """Handle on an externally managed cluster: same surface as the dev broker, no fault control."""

    is_dev_broker = False

    def __init__(self, bootstrap_servers: str):
        self.bootstrap_servers = bootstrap_servers

    def restart(self) -> None:
        pytest.skip(_SKIP_REASON)

    def stop(self) -> None:
        pytest.skip(_SKIP_REASON)

    def kill(self) -> None:
        pytest.skip(_SKIP_REASON)

    def start(self) -> RealKafkaCluster:
        return self


def _external() -> str | None:
    return os.environ.get(REAL_CLUSTER_ENV) or None


@pytest.fixture(scope="session")
def kafka_broker():
    bootstrap = _external()
    if bootstrap:
        yield RealKafkaCluster(bootstrap)
        return
    with ApacheKafkaBroker() as broker:
        yield broker


@pytest.fixture
def kafka_broker_fresh(kafka_broker):
    if isinstance(kafka_broker, RealKafkaCluster):
        yield kafka_broker
        return
    with ApacheKafkaBroker() as broker:
        yield broker


@pytest.fixture(scope="session")
def dev_kafka_broker():
    with KafkaDevBroker() as broker:
        yield broker


def _factory(broker):
    def make(partitions: int = 1, config: dict[str, str] | None = None, prefix: str = "t") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        return create_topic(broker.bootstrap_servers, name, partitions, config)

    return make


@pytest.fixture
def kafka_topic(kafka_broker):
    """Factory: ``kafka_topic(partitions=1, config=None, prefix="t")`` creates a fresh topic."""
    return _factory(kafka_broker)


@pytest.fixture
def kafka_topic_factory():
    """``kafka_topic_factory(broker)`` -> a topic factory for that broker (e.g. ``kafka_broker_fresh``)."""
    return _factory
