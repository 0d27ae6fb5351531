"""The ``kafka_cluster`` fixture: one replicated Apache Kafka cluster (three KRaft nodes, see
:mod:`samza_devkit.kafka_cluster`) per test module, so a module of cluster tests pays its JVM starts once.

Where network namespaces cannot be made, the fixture warns in one line and the nodes run on loopback (tests that
cut links then skip, naming that reason: ``skip_unless_cuttable``)."""

from __future__ import annotations

import warnings

import pytest

from .kafka_cluster import KafkaCluster

__all__ = ["kafka_cluster", "skip_unless_cuttable"]


@pytest.fixture(scope="module")
def kafka_cluster(tmp_path_factory):
    cluster = KafkaCluster(tmp_path_factory.mktemp("kafka-cluster"))
    if cluster.fallback:
        warnings.warn(f"Kafka cluster tests ran on loopback (no links to cut): {cluster.fallback}", stacklevel=1)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.close()


def skip_unless_cuttable(cluster: KafkaCluster) -> None:
    """Skip the calling test, naming why, where the cluster's nodes share loopback (nothing to cut)."""
    if cluster.lab is None:
        pytest.skip(f"cutting a Kafka node off needs network namespaces: {cluster.fallback}")
