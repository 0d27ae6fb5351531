"""What the cluster tests see of task attempts: the markers ``fault_driver``'s slow stage leaves, a SIGKILL of the
executor that runs one of them, and the Kafka clients a worker's Python processes hold (see
``samza_devkit.spark_cluster``)."""

from __future__ import annotations

import json
from pathlib import Path

from .fault_harness import wait_for

__all__ = ["kafka_clients_per_process", "kill_the_executor_of_a_task_in_flight", "marked"]


def marked(markers: Path) -> list[dict]:
    """The task attempts the slow stage saw: {"task": [stage, partition, attempt], "host": worker, "pid": ...}."""
    if not markers.is_dir():
        return []
    out = []
    for path in sorted(markers.iterdir()):
        text = path.read_text()
        if text:
            out.append({**json.loads(text), "pid": int(path.name.split("-")[1])})
    return out


def kill_the_executor_of_a_task_in_flight(cluster, markers: Path) -> dict:
    """SIGKILL the executor JVM of a task attempt the slow stage holds; that attempt's marker."""
    def a_task_in_flight():
        for mark in marked(markers):
            found = cluster.executor_of(mark["pid"])
            if found is not None:
                return mark, found
        return None

    mark, (_host, executor) = wait_for(a_task_in_flight, timeout=180, what="a task attempt inside the slow stage")
    cluster.kill_executor(executor)
    return mark


def kafka_clients_per_process(cluster, host: str) -> dict[int, int]:
    """Python process pid -> the librdkafka clients alive in it (one ``rdk:main`` thread each), for every Python
    process under ``host``'s executors."""
    out = {}
    for pid in cluster.python_workers(host):
        names = []
        for comm in Path(f"/proc/{pid}/task").glob("*/comm"):
            try:
                names.append(comm.read_text().strip())
            except OSError:
                continue
        out[pid] = names.count("rdk:main")
    return out
