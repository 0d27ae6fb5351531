"""The development broker's own tests: here ``kafka_broker`` and ``kafka_broker_fresh`` are the development broker
(everywhere else they are Apache Kafka). Where it departs from Apache Kafka is listed in its module documentation."""

from __future__ import annotations

import pytest

from samza_devkit.kafka_broker import KafkaDevBroker


@pytest.fixture(scope="session")
def kafka_broker(dev_kafka_broker):
    return dev_kafka_broker


@pytest.fixture
def kafka_broker_fresh():
    with KafkaDevBroker() as broker:
        yield broker
