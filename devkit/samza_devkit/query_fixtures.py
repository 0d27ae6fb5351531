"""pytest fixtures handing out a live-query harness per test: ``kq`` (samza-kafka on ``kafka_broker``) and ``ks``
(samza-kinesis on ``kinesis_endpoint``, DynamoDB on ``moto_server``). Every query a test left running is stopped
after it, so that a failed test's queries do not run into the next.

They are plugin fixtures rather than conftest ones because tests of more than one directory use them (the Kafka and
Kinesis suites, and the CLI and metrics tests that drive both sources)."""

from __future__ import annotations

import pytest

from samza_devkit.kafka_query_harness import KafkaQueryHarness
from samza_devkit.kinesis_query_harness import KinesisQueryHarness
from samza_devkit.query_harness import stop_active_queries

__all__ = ["kinesis_endpoint", "kq", "ks"]


@pytest.fixture
def kq(spark, kafka_broker, tmp_path):
    harness = KafkaQueryHarness(spark, kafka_broker.bootstrap_servers, tmp_path)
    yield harness
    stop_active_queries(spark)


@pytest.fixture
def kinesis_endpoint(request, moto_server):
    """The Kinesis endpoint of the test: moto (default), or kinesalite or kinesis-mock (behind its bridge) when
    parametrized so (the Kinesis suite's ``both_emulators`` and ``kinesis_mock_too`` markers)."""
    kind = getattr(request, "param", "moto")
    if kind == "kinesalite":
        return request.getfixturevalue("kinesalite_server")
    if kind == "kinesis-mock":
        return request.getfixturevalue("kinesis_mock_endpoint")
    return moto_server


@pytest.fixture
def ks(spark, kinesis_endpoint, moto_server, tmp_path):
    harness = KinesisQueryHarness(spark, kinesis_endpoint, tmp_path, dynamodb_endpoint=moto_server)
    yield harness
    stop_active_queries(spark)
