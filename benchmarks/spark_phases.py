"""Where a micro-batch's time goes: Spark's progress phases plus the task timings of Spark's own status API.

Spark's progress (``durationMs``) splits a batch into ``latestOffset`` (the source's driver side: for a Python
source, a round trip to the Python streaming source runner), ``queryPlanning`` (includes the source's
``partitions``, another round trip), ``walCommit`` (the offset log, and the source's ``commit`` of the previous
batch), ``addBatch`` (the tasks) and ``commitOffsets`` (the commit log). ``addBatch`` is split further with the
REST status API of the session's UI (``/api/v1/applications/<app>/jobs`` and ``.../stages/<id>/<attempt>/taskList``):
the job's tasks are found by the query's ``runId`` in the job description Spark gives every micro-batch's job;
per batch we keep

* ``taskLaunch``: from the job's submission to its first task's launch (scheduling, task serialization);
* ``tasksWall``: from the first task's launch to the last task's end (4 tasks on ``local[2]``: two waves);
* ``slowestTask`` and ``taskRunSum``: the longest and the summed ``executorRunTime`` (a task of a Python source:
  the Python worker reads and hands Arrow batches over, the JVM turns them into rows for the sink; Spark's
  source: the Java consumer and the rows, in the JVM); ``taskCpuSum``: the tasks' JVM thread CPU (a Python
  worker's own CPU is not in it: the Python worker is another process); ``deserializeSum``;
* ``jobTail``: the job's end minus its last task's end;
* ``py:<metric>``: for a Python source, the timing metrics a Python scan node reports on the ``/sql`` endpoint,
  when there are any (none appeared for PySpark 4.3.0's Python streaming data source in the 2026-11-29 runs, so
  the Python worker's own read is not split from the JVM's hand-over here: the CPU columns of the benchmark do that).

Needs ``spark.ui.enabled=true`` (the benchmarks' sessions turn it off by default; the head-to-head turns it on
for every source alike).
"""

from __future__ import annotations

import json
import statistics
import urllib.request
from datetime import datetime

__all__ = ["batch_phases", "mean_phases", "PROGRESS_PHASES"]

PROGRESS_PHASES = ("latestOffset", "queryPlanning", "walCommit", "addBatch", "commitOffsets")


def _get(base: str, path: str):
    with urllib.request.urlopen(f"{base}/api/v1/applications/{path}", timeout=30) as resp:
        return json.load(resp)


def _ms(text: str | None) -> float | None:
    if not text:
        return None
    return datetime.strptime(text.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp() * 1000


def _batch_of(description: str, run_id: str) -> int | None:
    if run_id not in description:
        return None
    for line in description.splitlines():
        if line.strip().startswith("batch = "):
            return int(line.split("=")[1])
    return None


def batch_phases(spark, run_id: str) -> dict[int, dict[str, float]]:
    """batch id -> task-side timings (ms) of the query ``run_id``; empty when the UI is off."""
    base = spark.sparkContext.uiWebUrl
    if not base:
        return {}
    app = spark.sparkContext.applicationId
    out: dict[int, dict[str, float]] = {}
    for job in _get(base, f"{app}/jobs"):
        batch = _batch_of(job.get("description", "") or "", run_id)
        if batch is None or job.get("status") != "SUCCEEDED":
            continue
        submitted, completed = _ms(job.get("submissionTime")), _ms(job.get("completionTime"))
        tasks = []
        for stage_id in job["stageIds"]:
            for stage in _get(base, f"{app}/stages/{stage_id}"):
                tasks += _get(base, f"{app}/stages/{stage_id}/{stage['attemptId']}/taskList?length=10000")
        if not tasks:
            continue
        first_launch = min(_ms(t["launchTime"]) for t in tasks)
        last_end = max(_ms(t["launchTime"]) + t["duration"] for t in tasks)
        metrics = [t["taskMetrics"] for t in tasks]
        phases = out.setdefault(batch, {})
        for key, value in (("taskLaunch", first_launch - submitted), ("tasksWall", last_end - first_launch),
                           ("slowestTask", max(m["executorRunTime"] for m in metrics)),
                           ("taskRunSum", sum(m["executorRunTime"] for m in metrics)),
                           ("taskCpuSum", sum(m["executorCpuTime"] for m in metrics) / 1e6),
                           ("deserializeSum", sum(m["executorDeserializeTime"] for m in metrics)),
                           ("jobTail", max(0.0, completed - last_end))):
            phases[key] = phases.get(key, 0.0) + value
    for batch, extra in _python_scan_metrics(base, app, run_id).items():
        out.setdefault(batch, {}).update(extra)
    return out


def _python_scan_metrics(base: str, app: str, run_id: str) -> dict[int, dict[str, float]]:
    """Per batch, the timing metrics (ms) of a Python data source scan node, as the /sql endpoint reports them."""
    out: dict[int, dict[str, float]] = {}
    try:
        executions = _get(base, f"{app}/sql?details=true&planDescription=false&length=100000")
    except OSError:
        return out
    for execution in executions:
        batch = _batch_of(execution.get("description", "") or "", run_id)
        if batch is None:
            continue
        for node in execution.get("nodes", []):
            for metric in node.get("metrics", []):
                name, value = metric.get("name", ""), str(metric.get("value", ""))
                if "python" in name.lower() and "time" in name.lower():
                    out.setdefault(batch, {})[f"py:{name}"] = _total_ms(value)
    return out


def _total_ms(value: str) -> float:
    """The total of a Spark timing metric's text ("total (min, med, max ...)\\n1.2 s (...)" or "123 ms")."""
    text = value.splitlines()[-1].split("(")[0].strip() if value else ""
    number, _, unit = text.partition(" ")
    try:
        n = float(number.replace(",", ""))
    except ValueError:
        return float("nan")
    return n * {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000}.get(unit.strip(), 1)


def mean_phases(progress: list[dict], tasks: dict[int, dict[str, float]], skip_first: bool = True) -> dict[str, float]:
    """Mean ms per steady batch (batch 0 left out, as in the steady-state rate, unless ``skip_first`` is false) of
    the progress phases and, where the status API had them, the task-side timings."""
    steady = progress[1:] if skip_first else progress
    means = {k: statistics.fmean(p["durationMs"].get(k, 0) for p in steady) for k in PROGRESS_PHASES}
    means["other"] = statistics.fmean(p["durationMs"].get("triggerExecution", 0) for p in steady) - sum(
        means[k] for k in PROGRESS_PHASES)
    rows = [tasks[p["batchId"]] for p in steady if p["batchId"] in tasks]
    for key in sorted({k for r in rows for k in r if k != "tasks"}):
        values = [r[key] for r in rows if key in r]
        means[key] = statistics.fmean(values)
    return means
