"""The ``spark_cluster`` fixture: one Spark standalone cluster and one Apache Kafka broker per test module
(``bare_spark_cluster``: the cluster alone, for samza-kinesis).

The cluster (:class:`samza_devkit.spark_cluster.SparkCluster`) has two workers, each in a network namespace of its
own, and two more namespaces for drivers (``d0``, ``d1``); the broker binds an address of its own on the cluster's
bridge, so a test can cut one worker off from it. Where namespaces cannot be made, the fixture warns in one line
and everything runs on loopback (tests that cut links then skip, naming that reason).
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from .apache_kafka import ApacheKafkaBroker
from .spark_cluster import BROKER, SparkCluster

__all__ = ["ClusterWithBroker", "bare_spark_cluster", "spark_cluster"]


@dataclass
class ClusterWithBroker:
    cluster: SparkCluster
    broker: ApacheKafkaBroker

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap_servers

    @property
    def broker_address(self) -> str:
        return self.cluster.service_address(BROKER)


@contextmanager
def _cluster(root):
    cluster = SparkCluster.start(root, workers=2)
    try:
        if cluster.fallback:
            warnings.warn(f"Spark cluster tests ran on ONE host (fallback): {cluster.fallback}", stacklevel=1)
        yield cluster
    finally:
        cluster.close()


@pytest.fixture(scope="module")
def bare_spark_cluster(tmp_path_factory):
    with _cluster(tmp_path_factory.mktemp("spark-cluster")) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory):
    with _cluster(tmp_path_factory.mktemp("spark-cluster")) as cluster:
        broker = ApacheKafkaBroker(host=cluster.service_address(BROKER)).start()
        try:
            yield ClusterWithBroker(cluster, broker)
        finally:
            broker.stop()
