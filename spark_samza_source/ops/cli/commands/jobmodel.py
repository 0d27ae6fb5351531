"""``samza-source jobmodel show``: the job model in the store, or in a Spark checkpoint's offset log."""

from __future__ import annotations

import argparse
from typing import Any

from ....core.jobmodel import JobModel
from ....core.jobmodel_store import JobModelStore
from ....metadata import redact_uri
from .. import errors
from ..render import render_table
from .common import _JOB_MODEL_HISTORY, Outcome, _header, _open, _parse_any_offset, _where

# ---- job model -----------------------------------------------------------------------------------------------


def _diff_json(model: JobModel, previous: JobModel | None) -> dict[str, Any] | None:
    if previous is None:
        return None
    diff = model.diff(previous)
    return {
        "newSsps": [{"ssp": s.key, "task": t.name} for s, t in diff.new_ssps.items()],
        "removedSsps": [{"ssp": s.key, "task": t.name} for s, t in diff.removed_ssps.items()],
        "movedSsps": [{"ssp": s.key, "from": a.name, "to": b.name} for s, (a, b) in diff.moved_ssps.items()],
        "newTasks": [t.name for t in diff.new_tasks],
        "removedTasks": [t.name for t in diff.removed_tasks],
        "lines": diff.describe(),
    }


def _job_model_from_checkpoint(args: argparse.Namespace):
    """(current model, previous model or None, source text, Kinesis offset or None) from the offset log."""
    from ....kinesis.driver.offset import KinesisOffset
    from ....samza_config.offset_log import OffsetLog

    log = OffsetLog(args.checkpoint)
    newest = None
    previous = None
    for found in log.offsets(_parse_any_offset, limit=_JOB_MODEL_HISTORY):
        if newest is None:
            newest = found
            continue
        if found.source_index == newest.source_index and found.offset.job_model != newest.offset.job_model:
            previous = found
            break
    if newest is None:
        raise errors.no_offset_in_checkpoint(args.checkpoint)
    kinesis = newest.offset if isinstance(newest.offset, KinesisOffset) else None
    source = f"checkpoint {args.checkpoint}, Spark batch {newest.batch_id}"
    return newest.offset.job_model, previous.offset.job_model if previous else None, source, kinesis


def jobmodel_show(args: argparse.Namespace) -> Outcome:
    kinesis = None
    if args.checkpoint:
        model, previous, source, kinesis = _job_model_from_checkpoint(args)
    else:
        stored = JobModelStore(_open(args))
        model = stored.current()
        if model is None:
            raise errors.no_job_model(_where(args))
        previous = stored.previous()
        source = f"metadata store {redact_uri(args.store)}"
    diff = model.diff(previous) if previous is not None else None
    shards: dict[str, list[str]] = {}
    if kinesis is not None:
        for ssp in sorted(model.ssps()):
            shards[ssp.key] = kinesis.mapper.shards_in(ssp.partition)

    rows = []
    for task, ssps in model.tasks.items():
        for ssp in sorted(ssps):
            notes = []
            if ssp in model.broadcast:
                notes.append("broadcast")
            if diff is not None and ssp in diff.new_ssps:
                notes.append("new")
            if diff is not None and ssp in diff.moved_ssps:
                notes.append(f"moved from {diff.moved_ssps[ssp][0]}")
            row = [task.name, ssp.key]
            if kinesis is not None:
                row.append(", ".join(shards.get(ssp.key, [])) or None)
            rows.append([*row, " ".join(notes)])
    headers = ["TASK", "SSP", *(["SHARDS"] if kinesis is not None else []), "CHANGE"]
    counts = {str(k): v for k, v in model.initial_partition_counts.items()}
    lines = [f"job model of job {args.job!r} (from {source})", render_table(headers, rows), ""]
    lines.append("initial partition counts: " + (", ".join(f"{k}={v}" for k, v in counts.items()) or "none"))
    lines.append("broadcast SSPs: " + (", ".join(s.key for s in sorted(model.broadcast)) or "none"))
    if previous is None:
        lines.append("previous job model: none recorded")
    elif diff is None or diff.empty:  # diff is None only without a previous model
        lines.append("changes since the previous job model: none")
    else:
        lines.append("changes since the previous job model:")
        lines.extend(f"  {line}" for line in diff.describe())
    data = {
        **_header(args),
        "source": source,
        "tasks": {t.name: [s.key for s in sorted(ssps)] for t, ssps in model.tasks.items()},
        "initialPartitionCounts": counts,
        "broadcast": [s.key for s in sorted(model.broadcast)],
        "previous": previous is not None,
        "changes": _diff_json(model, previous),
        "jobModel": model.to_json(),
    }
    if kinesis is not None:
        data["shards"] = shards
        data["generation"] = kinesis.generation
    return Outcome(data, "\n".join(lines))
