"""The fault-injection hooks of the integration tests: TEST INFRASTRUCTURE ONLY, never loaded in a normal run.

A query turns them on with ``.option("testing.faultHooks", "samza_devkit.fault_hooks")`` plus the options of the
hook it wants; the product's seam (``spark_samza_source/source/fault_hooks.py``) then hands every event of its
executor paths to :func:`on_event`. Each hook fires once per query, across task retries and Python workers: a
marker file (:func:`claim_once`) is that "once".

- ``testing.failInReadOnce`` = a file path (both sources): the first task attempt with something to read kills its
  own Python worker with ``os._exit(1)`` right after handing Spark its first batch -- a worker dying in the middle
  of ``read()``, with part of the task's rows already sent. Spark fails the attempt and retries the task. The
  marker holds ``<task>\\t<pid>``.
- ``testing.failAfterRecord`` = a file path (samza-kinesis): the first task attempt that recorded the end of a
  shard it read records from fails (after handing Spark the shard's rows, which Spark must then discard). The
  marker holds ``<shard id> <end JSON>``. With ``testing.failAfterRecordHold`` = a file path, that attempt first
  waits (up to :data:`HOLD_TIMEOUT_S`) until the file exists, so a test can change the stream before the retry.
  Ends recorded after it fired are appended to ``<marker>.after`` (:data:`AFTER_SUFFIX`).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Mapping
from typing import Any

from spark_samza_source.source.fault_hooks import SHARD_END_RECORDED, TASK_HANDED_BATCH, TASK_READ_DONE

__all__ = ["AFTER_SUFFIX", "FAIL_AFTER_RECORD", "FAIL_AFTER_RECORD_HOLD", "FAIL_IN_READ_ONCE", "HOLD_TIMEOUT_S",
           "claim_once", "on_event"]

log = logging.getLogger(__name__)

FAIL_IN_READ_ONCE = "testing.failInReadOnce"
FAIL_AFTER_RECORD = "testing.failAfterRecord"
FAIL_AFTER_RECORD_HOLD = "testing.failAfterRecordHold"
#: how long ``testing.failAfterRecordHold`` waits for its file before the attempt fails anyway
HOLD_TIMEOUT_S = 300
#: after ``testing.failAfterRecord`` fired, every later recorded end is appended to the marker path + this suffix,
#: so a test can see the retry record the very end the failed attempt recorded
AFTER_SUFFIX = ".after"


def on_event(event: str, options: Mapping[str, str], **details: Any) -> None:
    """What the product's seam calls: act on ``event`` when the query's ``testing.*`` options ask for it."""
    if event in (TASK_HANDED_BATCH, TASK_READ_DONE):
        marker = options.get(FAIL_IN_READ_ONCE)
        # after the first batch; or, when the task handed Spark no batch at all, at its end
        first = details["batch_number"] == 1 if event == TASK_HANDED_BATCH else details["batches"] == 0
        # samza-kafka says how many rows the task was planned; samza-kinesis knows its shards only
        planned = details.get("planned_rows", details.get("shards", 0))
        if marker and first and planned > 0:
            _exit_once(marker, details["task"])
    elif event == SHARD_END_RECORDED:
        marker = options.get(FAIL_AFTER_RECORD)
        if marker and details["records"]:
            _fail_once(marker, details["shard_id"], details["end"], options.get(FAIL_AFTER_RECORD_HOLD))


def claim_once(marker: str, line: str) -> bool:
    """Create ``marker`` holding ``line``; False when it exists already (another attempt fired first)."""
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as out:
        out.write(line + "\n")
    return True


def _exit_once(marker: str, task: str) -> None:
    if not claim_once(marker, f"{task}\t{os.getpid()}"):
        return
    log.warning("%s: killing this Python worker (pid %d) inside read() of task %r", FAIL_IN_READ_ONCE, os.getpid(),
                task)
    os._exit(1)


def _fail_once(marker: str, shard_id: str, end: Any, hold: str | None) -> None:
    line = f"{shard_id} {json.dumps(end.to_json())}"
    if not claim_once(marker, line):
        with open(marker + AFTER_SUFFIX, "a", encoding="utf-8") as later:  # the retry shows here
            later.write(line + "\n")
        return
    if hold:  # let the test act before the retry
        deadline = time.monotonic() + HOLD_TIMEOUT_S
        while not os.path.exists(hold) and time.monotonic() < deadline:
            time.sleep(0.05)
    raise RuntimeError(f"injected failure after recording the end of {shard_id} (option {FAIL_AFTER_RECORD})")
