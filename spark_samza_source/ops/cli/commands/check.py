"""``samza-source check``: every record of a job in its metadata store, read as the query reads it, each damaged
one reported with the damaged-record rule's verdict (``core/damage.py``, docs/guarantees.md) and its repair.

Exit status 1 when any damaged record is of a kind whose verdict is *fail* (the query, or a batch read, would stop
on it), 0 otherwise: records of *skip* kinds are reported, but the query goes on without them.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ....core.checkpoint import parse_mirror_record
from ....core.damage import RULES, DamageRule, Verdict
from ....core.errors import SamzaSourceError
from ....core.jobmodel import JobModel
from ....core.large_values import LargeValues
from ....core.startpoint import Startpoint
from ....core.startpoint_manager import parse_startpoint_key
from ....options.namespaces import BATCH_ENDS, CHECKPOINTS, JOB_MODEL, SHARD_TASKS, STARTPOINTS
from ..render import render_table
from .common import Outcome, _header, _open

#: a record's check beyond the store's own: raises the kind's error when the value is not a record of its kind
RecordCheck = Callable[[str, Any, str], None]


def _job_model(key: str, value: Any, where: str) -> None:
    JobModel.from_json(value)


def _startpoint(key: str, value: Any, where: str) -> None:
    parse_startpoint_key(key)
    Startpoint.from_json(value)


def _mirror(key: str, value: Any, where: str) -> None:
    parse_mirror_record(key, value, where)


def _shard_tasks(key: str, value: Any, where: str) -> None:
    from ....kinesis.driver.shard_tasks import ShardTasks

    ShardTasks.from_json(value, where, key)


def _batch_end(key: str, value: Any, where: str) -> None:
    from ....kinesis.errors import PositionFormatError
    from ....kinesis.positions import ShardPosition

    try:
        ShardPosition.from_json(value["end"])
    except (TypeError, KeyError, PositionFormatError) as err:
        raise ValueError(f"not a batch end: {err}") from None


CHECKS: dict[str, RecordCheck] = {
    JOB_MODEL: _job_model, STARTPOINTS: _startpoint, CHECKPOINTS: _mirror, SHARD_TASKS: _shard_tasks,
    BATCH_ENDS: _batch_end,
}


def _finding(rule: DamageRule, location: str, problem: str) -> dict[str, Any]:
    return {"kind": rule.kind, "namespace": rule.namespace, "location": location, "verdict": rule.verdict.value,
            "problem": problem, "repair": rule.repair}


def _check_kind(store: Any, rule: DamageRule) -> tuple[int, list[dict[str, Any]]]:
    """(records read, findings) of one kind."""
    found, _ = LargeValues(store).scan(rule.namespace)
    findings = [_finding(rule, bad.location, str(bad.error)) for bad in found.damaged]
    check = CHECKS.get(rule.namespace)
    for key, value in found.values.items():
        where = f"key {key!r:.200} of namespace {rule.namespace!r}"
        try:
            if check is not None:
                check(key, value, where)
        except (SamzaSourceError, ValueError, TypeError, KeyError) as err:
            findings.append(_finding(rule, where, getattr(err, "detail", None) or str(err)))
    return len(found.values) + len(found.damaged), findings


def check(args: argparse.Namespace) -> Outcome:
    store = _open(args)
    counts: dict[str, int] = {}
    findings: list[dict[str, Any]] = []
    for rule in RULES:
        counts[rule.kind], kind_findings = _check_kind(store, rule)
        findings.extend(kind_findings)
    stops = any(f["verdict"] == Verdict.FAIL.value for f in findings)
    data = {**_header(args), "records": counts, "damaged": findings, "stopsTheQuery": stops}
    total = sum(counts.values())
    if not findings:
        return Outcome(data, f"job {args.job!r}: {total} record(s) read, none damaged")
    rows = [[f["kind"], f["verdict"], f["location"], f["problem"], f["repair"]] for f in findings]
    verdict = ("a query of this job would stop on a damaged record: repair it first" if stops
               else "the query skips the damaged records and goes on")
    text = (f"job {args.job!r}: {total} record(s) read, {len(findings)} damaged; {verdict}\n"
            + render_table(["KIND", "VERDICT", "WHERE", "WHAT IS WRONG", "REPAIR"], rows))
    return Outcome(data, text, code=1 if stops else 0)
