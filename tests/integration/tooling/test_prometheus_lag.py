"""The optional Prometheus exporter (``ops.prometheus``), scraped over HTTP like Prometheus does.

A SamzaLagListener is fed progress events of a samza-kafka query (a broadcast SSP, two tasks) and of a
samza-kinesis query; ``/metrics`` must publish per-SSP and per-task series of both, with the units Prometheus
expects (Kinesis in seconds), drop a query's series when it terminates, and serve from a registry of its own (two
exporters in one process). The live end-to-end scrape of a running samza-kinesis query is in
``tests/integration/kinesis/test_kinesis_lag_progress.py``. Without prometheus-client the rest of the package
still imports, and this module says what to install.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families
from pyspark.sql.streaming.listener import QueryProgressEvent, QueryTerminatedEvent

from spark_samza_source.core.jobmodel import JobModel
from spark_samza_source.core.model import SystemStreamPartition, TaskName
from spark_samza_source.kafka.driver.offset import KafkaOffset
from spark_samza_source.kinesis.driver.planner import initial_offset, plan_next
from spark_samza_source.kinesis.driver.progress import millis_behind_report
from spark_samza_source.kinesis.shards import ShardInfo
from spark_samza_source.ops.metrics import SamzaLagListener
from spark_samza_source.ops.prometheus import serve_lag_metrics

KAFKA_QUERY = "3f0c6a8e-1d2b-4c5d-8e9f-0a1b2c3d4e5f"
KINESIS_QUERY = "9a8b7c6d-1d2b-4c5d-8e9f-0a1b2c3d4e5f"
RUN_ID = "5d3b7a0e-8f65-4c55-9d6a-0e4f4b1f2a10"
H = 2**128


def S(topic: str, p: int) -> SystemStreamPartition:
    return SystemStreamPartition("kafka", topic, p)


def event(query_id: str, name: str | None, batch: int, end: dict, latest: dict) -> QueryProgressEvent:
    source = {"description": "PythonMicroBatchStream@1", "startOffset": None, "endOffset": json.dumps(end),
              "latestOffset": json.dumps(latest), "numInputRows": 1, "inputRowsPerSecond": 1.0,
              "processedRowsPerSecond": 1.0, "metrics": {}}
    return QueryProgressEvent.fromJson({"progress": {
        "id": query_id, "runId": RUN_ID, "name": name, "timestamp": "2024-01-01T00:00:00.000Z", "batchId": batch,
        "batchDuration": 1, "stateOperators": [], "sources": [source],
        "sink": {"description": "x", "numOutputRows": -1}}})


def kafka_event(batch: int = 12) -> QueryProgressEvent:
    t0, t1 = TaskName("Partition 0"), TaskName("Partition 1")
    model = JobModel({t0: {S("orders.eu", 0), S("conf", 0)}, t1: {S("orders.eu", 1), S("conf", 0)}},
                     broadcast=frozenset({S("conf", 0)}))
    end = KafkaOffset(model, {(t0, S("orders.eu", 0)): 40, (t1, S("orders.eu", 1)): 55,
                            (t0, S("conf", 0)): 7, (t1, S("conf", 0)): 3})
    latest = {"kafka.orders.eu.0": 100, "kafka.orders.eu.1": 55, "kafka.conf.0": 9}
    return event(KAFKA_QUERY, "orders_etl", batch, end.to_json(), latest)


def kinesis_event(batch: int = 4) -> QueryProgressEvent:
    s0 = ShardInfo("shardId-000000000000", (), 0, H // 2 - 1, "0", None)
    s1 = ShardInfo("shardId-000000000001", (), H // 2, H - 1, "1000", None)
    end = plan_next(initial_offset([s0, s1], stream="clicks"), [s0, s1], {}).offset
    latest = millis_behind_report({s0.shard_id: 1500, s1.shard_id: 0}, batch - 1)
    return event(KINESIS_QUERY, None, batch, end.to_json(), latest)


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as resp:
        assert resp.status == 200 and resp.headers["Content-Type"].startswith("text/plain")
        text = resp.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def labels(**kv: str) -> tuple:
    return tuple(sorted(kv.items()))


@pytest.fixture
def exporter():
    listener = SamzaLagListener()
    running = serve_lag_metrics(listener=listener, port=0, addr="127.0.0.1")
    yield running
    running.stop()


def test_both_systems_per_ssp_and_per_task_over_http(exporter):
    exporter.listener.onQueryProgress(kafka_event())
    exporter.listener.onQueryProgress(kinesis_event())
    got = scrape(exporter.port)

    kafka = {"query": "orders_etl", "query_id": KAFKA_QUERY, "source": "0", "system": "kafka"}
    assert {k: v for k, v in got.items() if k[0] == "spark_samza_ssp_lag_records"} == {
        ("spark_samza_ssp_lag_records", labels(**kafka, ssp="kafka.conf.0", stream="conf", partition="0")): 6.0,
        ("spark_samza_ssp_lag_records", labels(**kafka, ssp="kafka.orders.eu.0", stream="orders.eu",
                                               partition="0")): 60.0,
        ("spark_samza_ssp_lag_records", labels(**kafka, ssp="kafka.orders.eu.1", stream="orders.eu",
                                               partition="1")): 0.0,
    }
    assert {k: v for k, v in got.items() if k[0] == "spark_samza_task_lag_records"} == {
        ("spark_samza_task_lag_records", labels(**kafka, task="Partition 0")): 62.0,
        ("spark_samza_task_lag_records", labels(**kafka, task="Partition 1")): 6.0,
    }
    assert got[("spark_samza_lag_batch", labels(**kafka))] == 12

    kinesis = {"query": KINESIS_QUERY, "query_id": KINESIS_QUERY, "source": "0", "system": "kinesis"}  # unnamed
    assert {k: v for k, v in got.items() if k[0] == "spark_samza_shard_lag_seconds"} == {
        ("spark_samza_shard_lag_seconds", labels(**kinesis, shard="shardId-000000000000", ssp="kinesis.clicks.0",
                                                 task="Task-0")): 1.5,
        ("spark_samza_shard_lag_seconds", labels(**kinesis, shard="shardId-000000000001", ssp="kinesis.clicks.2",
                                                 task="Task-1")): 0.0,
    }
    assert {k: v for k, v in got.items() if k[0] == "spark_samza_ssp_lag_seconds"} == {
        ("spark_samza_ssp_lag_seconds", labels(**kinesis, ssp="kinesis.clicks.0", stream="clicks",
                                               partition="0")): 1.5,
        ("spark_samza_ssp_lag_seconds", labels(**kinesis, ssp="kinesis.clicks.2", stream="clicks",
                                               partition="2")): 0.0,
    }
    assert {k: v for k, v in got.items() if k[0] == "spark_samza_task_lag_seconds"} == {
        ("spark_samza_task_lag_seconds", labels(**kinesis, task="Task-0")): 1.5,
        ("spark_samza_task_lag_seconds", labels(**kinesis, task="Task-1")): 0.0,
    }
    assert got[("spark_samza_lag_batch", labels(**kinesis))] == 4


def test_a_scrape_sees_the_latest_event_and_a_terminated_query_disappears(exporter):
    exporter.listener.onQueryProgress(kinesis_event(4))
    exporter.listener.onQueryProgress(kafka_event(12))
    exporter.listener.onQueryProgress(kafka_event(13))
    got = scrape(exporter.port)
    assert got[("spark_samza_lag_batch", labels(query="orders_etl", query_id=KAFKA_QUERY, source="0",
                                                system="kafka"))] == 13
    exporter.listener.onQueryTerminated(QueryTerminatedEvent.fromJson(
        {"id": KAFKA_QUERY, "runId": RUN_ID, "exception": None, "errorClassOnException": None}))
    got = scrape(exporter.port)
    assert not [k for k in got if ("system", "kafka") in k[1]]
    assert [k for k in got if ("system", "kinesis") in k[1]]


def test_two_exporters_in_one_process_serve_their_own_listeners(exporter):
    other = serve_lag_metrics(listener=SamzaLagListener(), port=0, addr="127.0.0.1")
    try:
        exporter.listener.onQueryProgress(kafka_event())
        assert other.port != exporter.port
        assert scrape(other.port) == {}  # nothing reported to its listener (and no default-registry metrics)
        assert scrape(exporter.port)
    finally:
        other.stop()
    # a ConfigError: still the ValueError it was, now with a condition
    with pytest.raises(ValueError, match=r"^\[SAMZA_LAG_EXPORTER_NEEDS_LISTENER\] serve_lag_metrics needs a "):
        serve_lag_metrics(port=0)


def test_the_package_imports_without_prometheus_client_and_the_exporter_says_what_to_install():
    code = (
        "import sys; sys.modules['prometheus_client'] = None\n"
        "import spark_samza_source.ops.metrics, spark_samza_source.ops.lag, spark_samza_source.ops.cli\n"
        "import pyspark_samza_kafka, pyspark_samza_kinesis\n"
        "try:\n"
        "    import spark_samza_source.ops.prometheus\n"
        "except ImportError as err:\n"
        "    print(err)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert "pip install prometheus-client" in out.stdout and "spark-samza-source[prometheus]" in out.stdout
    assert "make wheel" in out.stdout
