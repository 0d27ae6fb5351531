"""Fixtures of the fault-injection tests; the harnesses and checks they hand out live in the development kit
(:mod:`samza_devkit.fault_harness`, :mod:`samza_devkit.checkpoint_log`, :mod:`samza_devkit.cuttable_proxy`), where
test modules can import them.

- ``fault_queries(bootstrap)``: a factory of :class:`FaultQueries` (samza-kafka queries on any broker: the shared
  Apache Kafka broker or a test's own);
- ``moto_proxy``: a :class:`CuttableProxy` in front of the shared moto server;
- ``ks_proxy``: :class:`KinesisFaultQueries` whose AWS endpoint is ``moto_proxy``.
"""

from __future__ import annotations

import pytest

from samza_devkit.cuttable_proxy import CuttableProxy
from samza_devkit.fault_harness import FaultQueries, KinesisFaultQueries
from samza_devkit.query_harness import stop_active_queries


@pytest.fixture
def fault_queries(spark, tmp_path):
    made = []

    def make(bootstrap: str) -> FaultQueries:
        harness = FaultQueries(spark, bootstrap, tmp_path / f"q{len(made)}")
        made.append(harness)
        return harness

    yield make
    stop_active_queries(spark)


@pytest.fixture
def moto_proxy(moto_server):
    proxy = CuttableProxy(moto_server)
    yield proxy
    proxy.close()


@pytest.fixture
def ks_proxy(spark, moto_server, moto_proxy, tmp_path):
    harness = KinesisFaultQueries(spark, moto_server, moto_proxy, tmp_path)
    yield harness
    stop_active_queries(spark)
