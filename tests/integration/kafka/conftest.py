"""Fixtures of the Kafka reader tests: both executor read paths (the live-query harness ``kq`` is a devkit
plugin fixture, samza_devkit/query_fixtures.py)."""

from __future__ import annotations

import pytest

from spark_samza_source.kafka.executor.consumer_cache import ConsumerCache


@pytest.fixture(params=["python", "native"])
def read_path(request) -> str:
    """Both executor read paths (kafka/executor/reader.py, kafka/executor/native_reader.py): a reader test runs against
    each.
    ``native`` fails (never skips) where the extension is not built: ``make setup`` builds it."""
    return request.param


@pytest.fixture
def new_reader_cache(read_path):
    """``new_reader_cache(capacity=2, factory=None)``: a private consumer cache holding ``read_path``'s consumers
    (confluent-kafka's or the native reader's), ``factory`` making them when given."""

    def make(capacity: int = 2, factory=None) -> ConsumerCache:
        native = read_path == "native"
        if factory is None:
            return ConsumerCache.native(capacity) if native else ConsumerCache(capacity)
        return ConsumerCache(capacity, factory, is_native=native)

    return make
