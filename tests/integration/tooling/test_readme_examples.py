"""The README's two examples run as written, print what the README says they print, and nothing noisy.

The examples are taken from README.md (the Python blocks after ``<!-- readme-example: kafka -->`` and
``<!-- readme-example: kinesis -->``) and run in one fresh Python process (one JVM), against Apache Kafka and a
moto server started here as the README starts them (``python -m samza_devkit.apache_kafka`` /
``python -m samza_devkit.moto_server``). Only these are replaced: the ports (9092 and 5000 may be taken on a shared
machine), the ``/tmp/samza-readme`` work directory (a temporary one) and ``conf/log4j2.properties`` (made absolute:
the process runs in that temporary directory, not the repository's root). No log line of Spark or librdkafka may
show; the JDK's own notice that Spark enables an incubator module (``WARNING: Using incubator modules``, printed by
the JVM before any logging is set up) is the one line allowed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from samza_devkit.apache_kafka import ApacheKafkaBroker
from samza_devkit.moto_server import MotoServerProcess

pytestmark = [pytest.mark.spark, pytest.mark.slow]

README = Path(__file__).resolve().parents[3] / "README.md"
LOG_LINE = re.compile(r"\b(WARN|WARNING|ERROR)\b|%\d\|")
JDK_NOTICE = "WARNING: Using incubator modules: jdk.incubator.vector"


def _available_now_is_one_batch() -> bool:
    """PySpark before 4.2 runs ``Trigger.AvailableNow`` as a single micro-batch for Python sources."""
    import pyspark

    return tuple(int(part) for part in pyspark.__version__.split(".")[:2]) < (4, 2)


def example(name: str) -> str:
    match = re.search(rf"<!-- readme-example: {name} -->\n```python\n(.*?)\n```", README.read_text(), re.S)
    assert match, f"README.md has no example marked {name!r}"
    return match.group(1)


def test_both_readme_examples_run_as_written_and_print_what_the_readme_says(tmp_path):
    kafka, kinesis = example("kafka"), example("kinesis")
    assert 'BOOTSTRAP = "localhost:9092"' in kafka and 'ENDPOINT = "http://127.0.0.1:5000"' in kinesis
    with ApacheKafkaBroker() as broker, MotoServerProcess() as endpoint:
        script = (kafka.replace("localhost:9092", broker.bootstrap_servers) + "\n\n"
                  + kinesis.replace("http://127.0.0.1:5000", endpoint)).replace("/tmp/samza-readme", str(tmp_path))
        script = script.replace("=conf/log4j2.properties", f"={README.parent / 'conf' / 'log4j2.properties'}")
        # the README's environment: no PYSPARK_* or AWS_* (the examples set their own); loopback as in the fixtures
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "AWS_"))}
        env["SPARK_LOCAL_IP"] = "127.0.0.1"
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=540,
                              cwd=tmp_path, env=env)
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    # samza-kafka: still two tasks after the growth 2 -> 4, partitions {0, 2} and {1, 3}, 200 records
    rows = re.findall(r"\|\s*(Partition \d)\|\s*(\d)\|\s*(\d+)\|", out)
    tasks: dict[str, set[int]] = {}
    for task, partition, _ in rows:
        tasks.setdefault(task, set()).add(int(partition))
    if _available_now_is_one_batch():
        # what the README says of PySpark 4.0 and 4.1: the second read stops at the growth's cut
        assert "150 records" in README.read_text()
        assert tasks == {"Partition 0": {0}, "Partition 1": {1}}, out
        assert sum(int(n) for *_, n in rows) == 150, out
    else:
        assert tasks == {"Partition 0": {0, 2}, "Partition 1": {1, 3}}, out
        assert sum(int(n) for *_, n in rows) == 200, out
    # samza-kinesis: Task-0 and Task-1, one shard each, 100 records in all
    counts = {task: int(n) for task, n in re.findall(r"\|\s*(Task-\d)\|shardId-\d+\|\s*(\d+)\|", out)}
    assert set(counts) == {"Task-0", "Task-1"} and sum(counts.values()) == 100, out
    # before 4.2 Spark says once per query that it runs AvailableNow as one batch (docs/deployment.md quotes it)
    fallback = "does not support Trigger.AvailableNow. Falling back to single batch execution"
    noisy = [line for line in (out + done.stderr).splitlines()
             if LOG_LINE.search(line) and not line.startswith(JDK_NOTICE)
             and not (_available_now_is_one_batch() and fallback in line)]
    assert noisy == [], noisy[:10]
