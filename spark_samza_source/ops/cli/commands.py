"""What each ``samza-source`` command does. Each returns an :class:`Outcome` (JSON data, text, exit status).

Nothing here prints: ``cli.main`` prints the outcome as text or ``--json`` and scrubs secrets from all of it.
Client libraries are imported only by the commands that need them (``lag`` imports confluent-kafka or boto3),
so ``startpoint`` and ``jobmodel`` start fast.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

from ...core.checkpoint import CheckpointMirror
from ...core.errors import ConfigError, SamzaSourceError, StartpointFormatError
from ...core.jobmodel import JobModel
from ...core.model import SystemStreamPartition, TaskName
from ...core.startpoint import (
    Startpoint,
    StartpointOldest,
    StartpointSpecific,
    StartpointTimestamp,
    StartpointUpcoming,
)
from ...core.startpoint_manager import StartpointManager, parse_startpoint_key, startpoint_key
from ...metadata import open_store, redact_uri
from ...options.common import STARTPOINT_POLL_INTERVAL
from ...options.namespaces import (
    CHECKPOINTS,
    JOB_MODEL,
    JOB_MODEL_CURRENT,
    JOB_MODEL_PREVIOUS,
    STARTPOINTS,
    STREAM_CONSUMERS,
)
from .errors import CommandError, UsageError
from .render import cell, iso_ms, render_table

__all__ = ["Outcome", "run"]

KAFKA = "kafka"
KINESIS = "kinesis"
#: how many offset files ``jobmodel show --checkpoint`` walks back to find the previous job model
_JOB_MODEL_HISTORY = 1000


@dataclass
class Outcome:
    data: dict[str, Any]
    text: str
    code: int = 0
    warnings: list[str] = field(default_factory=list)


# ---- helpers -------------------------------------------------------------------------------------------------


def _open(args: argparse.Namespace):
    try:
        return open_store(args.store, args.job)
    except ConfigError as err:  # a malformed URI or job name is a usage problem
        raise UsageError(str(err)) from None


def _header(args: argparse.Namespace) -> dict[str, Any]:
    return {"job": args.job, "store": redact_uri(args.store)}


def _where(args: argparse.Namespace) -> str:
    return f"job {args.job!r} in metadata store {redact_uri(args.store)}"


def describe_startpoint(sp: Startpoint) -> str:
    if isinstance(sp, StartpointSpecific):
        return f"Specific {sp.position}"
    if isinstance(sp, StartpointTimestamp):
        return f"Timestamp {iso_ms(sp.timestamp_ms)} ({sp.timestamp_ms})"
    if isinstance(sp, StartpointOldest):
        return "Oldest"
    if isinstance(sp, StartpointUpcoming):
        return "Upcoming"
    return sp.to_json_str()


def _startpoint_value(sp: Startpoint) -> Any:
    if isinstance(sp, StartpointSpecific):
        return sp.position
    if isinstance(sp, StartpointTimestamp):
        return iso_ms(sp.timestamp_ms)
    if isinstance(sp, (StartpointOldest, StartpointUpcoming)):
        return None
    return sp.to_json()


def _build_startpoint(args: argparse.Namespace) -> Startpoint:
    if args.specific is not None:
        return StartpointSpecific(args.specific)
    if args.timestamp is not None:
        return StartpointTimestamp(args.timestamp)
    if args.oldest:
        return StartpointOldest()
    return StartpointUpcoming()


def _current_job_model(store) -> JobModel | None:
    raw = store.get(JOB_MODEL, JOB_MODEL_CURRENT)
    return None if raw is None else JobModel.from_json(raw)


def _parse_any_offset(line: str):
    """A samza-kafka ``KafkaOffset`` or a samza-kinesis ``KinesisOffset`` from one offset-log line."""
    from ...kafka.driver.offset import KafkaOffset
    from ...kinesis.driver.offset import KinesisOffset

    try:
        return KafkaOffset.from_json_str(line)
    except SamzaSourceError:
        return KinesisOffset.from_json_str(line)


def _kinesis_offsets(location: str, stream: str):
    from ...kinesis.driver.offset import KinesisOffset
    from ...samza_config.offset_log import OffsetLog

    return OffsetLog(location), KinesisOffset.from_json_str, (lambda o: o.stream == stream)


# ---- SSP selection -------------------------------------------------------------------------------------------


@dataclass
class Selected:
    ssp: SystemStreamPartition
    task: TaskName | None
    info: dict[str, Any] = field(default_factory=dict)
    shards_in_slot: list[str] | None = None


def _select(args: argparse.Namespace) -> Selected:
    task = TaskName(args.task) if args.task else None
    if args.topic is not None:
        return Selected(SystemStreamPartition(KAFKA, args.topic, args.partition), task)
    if args.slot is not None:
        return Selected(SystemStreamPartition(KINESIS, args.stream, args.slot), task, {"slot": args.slot})
    log, parse, accept = _kinesis_offsets(args.checkpoint, args.stream)
    found = log.latest(parse, accept)
    offset = found.offset
    ssp = offset.slot_ssp(args.shard)
    if ssp is None:
        state = offset.shards.get(args.shard)
        why = (f"it is {state.status} (read to its end)" if state is not None
               else "the query does not know it (not listed when that batch was planned)")
        mapped = ", ".join(sorted(offset.mapper.assignments())) or "none"
        raise CommandError(
            f"shard {args.shard} of stream {args.stream!r} has no slot in the job model of Spark batch "
            f"{found.batch_id} in {args.checkpoint}: {why}. Shards with a slot: {mapped}"
        )
    shard_task = offset.task_of(args.shard)
    if task is not None and task != shard_task:
        raise CommandError(f"shard {args.shard} is in task {shard_task} (slot {ssp.partition}), not in {task}")
    shards = offset.shards_in_slot(shard_task, ssp)
    info = {"shard": args.shard, "slot": ssp.partition, "shardTask": shard_task.name,
            "sparkBatch": found.batch_id, "shardsInSlot": shards}
    return Selected(ssp, task, info, shards)


def _selected_json(sel: Selected) -> dict[str, Any]:
    return {"ssp": sel.ssp.to_json(), "sspKey": sel.ssp.key, "task": sel.task.name if sel.task else None,
            **sel.info}


def _describe_selected(sel: Selected) -> str:
    text = str(sel.ssp)
    if "shard" in sel.info:
        text += f" (slot of shard {sel.info['shard']} in {sel.info['shardTask']})"
    if sel.task is not None:
        text += f" in task {sel.task}"
    return text


# ---- startpoints ---------------------------------------------------------------------------------------------


def _scan_startpoints(store) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(entries, malformed) of the startpoint namespace, each as the JSON the commands print."""
    manager = StartpointManager(store)
    entries, malformed = [], []
    for key, raw in sorted(store.list(STARTPOINTS).items()):
        try:
            ssp, task = parse_startpoint_key(key)
        except StartpointFormatError as err:
            malformed.append({"key": key, "error": str(err), "value": raw})
            continue
        base = {"key": key, "ssp": ssp.key, "system": ssp.system, "stream": ssp.stream, "partition": ssp.partition,
                "task": task.name if task else None}
        try:
            sp = Startpoint.from_json(raw)
        except StartpointFormatError as err:
            malformed.append({**base, "error": str(err), "value": raw})
            continue
        problem = _system_problem(ssp, sp)
        if problem is not None:  # valid JSON, but it can never position this system's SSP: the query skips it
            malformed.append({**base, "error": problem, "value": raw})
            continue
        entries.append({**base, "type": sp.type_name, "value": _startpoint_value(sp), "startpoint": sp.to_json(),
                        "created": iso_ms(sp.creation_timestamp), "expired": manager.is_expired(sp),
                        "_ssp": ssp, "_task": task})
    return entries, malformed


def _system_problem(ssp, startpoint: Startpoint) -> str | None:
    """Why ``startpoint`` can never apply to ``ssp``'s system (e.g. a negative Kafka offset), or None."""
    if ssp.system == KAFKA:
        from ...kafka.driver.startpoints import kafka_startpoint_problem

        return kafka_startpoint_problem(startpoint)
    return None


def _public(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if not k.startswith("_")}


def _startpoint_table(entries: list[dict[str, Any]]) -> str:
    rows = [[e["ssp"], e["task"], e["type"], e["value"], e["created"], "expired" if e["expired"] else ""]
            for e in entries]
    return render_table(["SSP", "TASK", "TYPE", "VALUE", "CREATED", "STATE"], rows)


def _matching(entries, sel: Selected) -> list[dict[str, Any]]:
    return [e for e in entries if e["_ssp"] == sel.ssp and (sel.task is None or e["_task"] == sel.task)]


def _select_every(args: argparse.Namespace, store) -> list[Selected]:
    """``set --topic T`` alone: every partition of T in the job's current job model (mirrored in the store);
    ``set --stream S`` alone: every slot of S that holds shards in the job model of the query's latest offset
    (``--checkpoint``). Empty slots are left out: a startpoint there would wait for whichever shard a later reshard
    puts in the slot, and apply to it."""
    if args.topic is not None:
        model = _current_job_model(store)
        if model is None:
            raise CommandError(f"no job model is stored for {_where(args)}, so the partitions of topic "
                               f"{args.topic!r} are not known: the query has not planned a batch yet (or --store / "
                               "--job are wrong); give --partition P for each partition")
        ssps = sorted(ssp for ssp in model.ssps() if ssp.system == KAFKA and ssp.stream == args.topic)
        if not ssps:
            topics = sorted({ssp.stream for ssp in model.ssps() if ssp.system == KAFKA})
            raise CommandError(f"topic {args.topic!r} is not in the current job model of {_where(args)} (its topics: "
                               f"{', '.join(topics) or 'none'}); give --partition P to store a startpoint anyway")
        return [Selected(ssp, None) for ssp in ssps]
    log, parse, accept = _kinesis_offsets(args.checkpoint, args.stream)
    found = log.latest(parse, accept)
    offset = found.offset
    selected = []
    for slot, shards in sorted(offset.mapper.used_slots().items()):
        ssp = offset.ssp(slot)
        selected.append(Selected(ssp, None, {"slot": slot, "sparkBatch": found.batch_id,
                                             "shardsInSlot": sorted(shards)}, sorted(shards)))
    if not selected:
        raise CommandError(f"no slot of stream {args.stream!r} holds a shard in Spark batch {found.batch_id} of "
                           f"{args.checkpoint}")
    return selected


def _startpoint_set_every(args: argparse.Namespace) -> Outcome:
    store = _open(args)
    selected = _select_every(args, store)
    startpoint = _build_startpoint(args)
    manager = StartpointManager(store)
    keys = [manager.write(sel.ssp, startpoint, None) for sel in selected]
    what = (f"every partition of topic {args.topic!r}" if args.topic is not None
            else f"every slot of stream {args.stream!r}")
    data = {**_header(args), "action": "set", "keys": keys, "ssps": [_selected_json(sel) for sel in selected],
            "type": startpoint.type_name, "startpoint": startpoint.to_json()}
    lines = "\n".join(f"  {key!r}: {_describe_selected(sel)}"
                      + (f" (shards {', '.join(sel.shards_in_slot)})" if sel.shards_in_slot else "")
                      for key, sel in zip(keys, selected, strict=True))
    text = (f"stored startpoint {describe_startpoint(startpoint)} for {what} ({len(keys)}), {_where(args)}:\n"
            f"{lines}\n"
            f"  a running query applies them at the next micro-batch planned after {STARTPOINT_POLL_INTERVAL.name} "
            "(a stopped one when it restarts); each is deleted once that batch commits")
    return Outcome(data, text)


def startpoint_set(args: argparse.Namespace) -> Outcome:
    if args.partition is None and args.shard is None and args.slot is None:
        return _startpoint_set_every(args)
    sel = _select(args)
    startpoint = _build_startpoint(args)
    warnings = []
    if isinstance(startpoint, StartpointSpecific) and sel.shards_in_slot is not None and len(sel.shards_in_slot) > 1:
        raise CommandError(
            f"slot {sel.ssp.partition} holds shards {', '.join(sel.shards_in_slot)} (an overloaded slot): one "
            "sequence number cannot position them all; use --timestamp, --oldest or --upcoming"
        )
    if sel.shards_in_slot is not None and len(sel.shards_in_slot) > 1:
        warnings.append(f"slot {sel.ssp.partition} holds shards {', '.join(sel.shards_in_slot)}: the startpoint "
                        "applies to all of them")
    store = _open(args)
    if sel.ssp.system == KAFKA:
        model = _current_job_model(store)
        if model is None:
            if not store.list(CHECKPOINTS):
                warnings.append(f"nothing is stored yet for {_where(args)}: check --store and --job (the "
                                "startpoint is stored anyway and applies when the query plans a batch)")
        elif sel.ssp not in model.ssps():
            warnings.append(f"{sel.ssp} is not in the job's current job model: the startpoint is kept until a job "
                            "model holds it")
        elif sel.task is not None and sel.task not in model.tasks_for(sel.ssp):
            holders = ", ".join(t.name for t in model.tasks_for(sel.ssp))
            warnings.append(f"task {sel.task} does not hold {sel.ssp} in the current job model (held by "
                            f"{holders}): the startpoint is kept until it does")
    key = StartpointManager(store).write(sel.ssp, startpoint, sel.task)
    data = {**_header(args), "action": "set", "key": key, **_selected_json(sel), "type": startpoint.type_name,
            "startpoint": startpoint.to_json()}
    text = (f"stored startpoint {describe_startpoint(startpoint)} for {_describe_selected(sel)}\n"
            f"  key {key!r}, {_where(args)}\n"
            f"  a running query applies it at the next micro-batch planned after {STARTPOINT_POLL_INTERVAL.name} (a "
            "stopped one when it restarts); it is deleted once that batch commits")
    return Outcome(data, text, warnings=warnings)


def startpoint_get(args: argparse.Namespace) -> Outcome:
    sel = _select(args)
    entries, malformed = _scan_startpoints(_open(args))
    found = _matching(entries, sel)
    bad = [m for m in malformed if m.get("ssp") == sel.ssp.key
           and (sel.task is None or m.get("task") == sel.task.name)]
    data = {**_header(args), **_selected_json(sel), "startpoints": [_public(e) for e in found], "malformed": bad}
    if not found and not bad:
        return Outcome(data, f"no startpoint stored for {_describe_selected(sel)} ({_where(args)})", code=1)
    text = _startpoint_table(found) if found else ""
    for m in bad:
        text += f"\nmalformed startpoint at key {m['key']!r}: {m['error']}"
    return Outcome(data, text.strip("\n"), code=0 if found else 1)


def startpoint_delete(args: argparse.Namespace) -> Outcome:
    sel = _select(args)
    store = _open(args)
    if sel.task is not None:
        keys = [startpoint_key(sel.ssp, sel.task)]
    else:
        keys = []
        for key in sorted(store.list(STARTPOINTS)):
            try:
                ssp, _task = parse_startpoint_key(key)
            except StartpointFormatError:
                continue
            if ssp == sel.ssp:
                keys.append(key)
    deleted = []
    for key in keys:
        if store.get(STARTPOINTS, key) is not None:
            store.delete(STARTPOINTS, key)
            deleted.append(key)
    data = {**_header(args), "action": "delete", **_selected_json(sel), "deleted": deleted}
    if deleted:
        text = f"deleted {len(deleted)} startpoint(s) of {_describe_selected(sel)}: " + ", ".join(
            repr(k) for k in deleted)
    else:
        text = f"no startpoint was stored for {_describe_selected(sel)} ({_where(args)}); nothing deleted"
    return Outcome(data, text)


def startpoint_list(args: argparse.Namespace) -> Outcome:
    entries, malformed = _scan_startpoints(_open(args))
    data = {**_header(args), "startpoints": [_public(e) for e in entries], "malformed": malformed}
    if not entries and not malformed:
        return Outcome(data, f"no startpoints stored for {_where(args)}")
    text = _startpoint_table(entries) if entries else ""
    for m in malformed:
        text += f"\nmalformed startpoint at key {m['key']!r}: {m['error']}"
    return Outcome(data, text.strip("\n"))


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
    from ...kinesis.driver.offset import KinesisOffset
    from ...samza_config.offset_log import OffsetLog

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
        raise CommandError(f"no samza-kafka or samza-kinesis offset in the checkpoint location {args.checkpoint}")
    kinesis = newest.offset if isinstance(newest.offset, KinesisOffset) else None
    source = f"checkpoint {args.checkpoint}, Spark batch {newest.batch_id}"
    return newest.offset.job_model, previous.offset.job_model if previous else None, source, kinesis


def jobmodel_show(args: argparse.Namespace) -> Outcome:
    kinesis = None
    if args.checkpoint:
        model, previous, source, kinesis = _job_model_from_checkpoint(args)
    else:
        store = _open(args)
        current = store.get(JOB_MODEL, JOB_MODEL_CURRENT)
        if current is None:
            raise CommandError(
                f"no job model stored for {_where(args)}: the samza-kafka driver writes it when the query plans "
                "its first batch (check --store and --job); samza-kinesis keeps its job model only in the Spark "
                "offset: pass --checkpoint DIR"
            )
        model = JobModel.from_json(current)
        raw_previous = store.get(JOB_MODEL, JOB_MODEL_PREVIOUS)
        previous = JobModel.from_json(raw_previous) if raw_previous is not None else None
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
    elif diff is not None and diff.empty:
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


# ---- checkpoints ---------------------------------------------------------------------------------------------


def _position_text(position: Any) -> str:
    """A mirrored position for people: Kafka offsets as is, Kinesis positions as ``after 4960...``."""
    if isinstance(position, dict):
        from ...kinesis.errors import PositionFormatError
        from ...kinesis.positions import ShardPosition

        try:
            if isinstance(position.get("type"), str):
                return str(ShardPosition.from_json(position))
            return "; ".join(f"{shard}: {ShardPosition.from_json(p)}" for shard, p in sorted(position.items()))
        except (PositionFormatError, AttributeError):
            pass
    return position if isinstance(position, (int, str)) else cell(position)


def checkpoint_show(args: argparse.Namespace) -> Outcome:
    checkpoint = CheckpointMirror(_open(args)).read()
    if checkpoint is None:
        raise CommandError(f"no committed positions mirrored for {_where(args)}: the query has not committed a "
                           "batch yet (Spark commits a batch when it plans the next one)")
    rows = [[task.name, ssp.key, _position_text(pos)] for task, positions in checkpoint.positions.items()
            for ssp, pos in positions.items()]
    batch = f"batch {checkpoint.batch_id}, " if checkpoint.batch_id is not None else ""
    text = (f"committed positions of job {args.job!r} ({batch}committed at {iso_ms(checkpoint.timestamp_ms)})\n"
            + render_table(["TASK", "SSP", "POSITION"], rows))
    data = {**_header(args), "committedAt": iso_ms(checkpoint.timestamp_ms), "checkpoint": checkpoint.to_json()}
    return Outcome(data, text)


# ---- lag -----------------------------------------------------------------------------------------------------


def _lag_table(report) -> str:
    if report.system == KAFKA:
        rows = [[r.ssp.key, ", ".join(r.tasks), r.committed, r.latest, r.behind, r.note] for r in report.rows]
        table = render_table(["SSP", "TASKS", "COMMITTED", "LATEST", "BEHIND", "NOTE"], rows)
    else:
        rows = [[r.tasks[0] if r.tasks else None, r.ssp.key, r.shard, r.committed, r.latest,
                 (f"{r.behind}+" if r.capped else r.behind), r.millis_behind_latest, r.note] for r in report.rows]
        table = render_table(["TASK", "SLOT", "SHARD", "COMMITTED", "LATEST", "BEHIND", "MS_BEHIND", "NOTE"], rows)
    totals = report.totals()
    what = "partitions" if report.system == KAFKA else "shards"
    unit = "offsets" if report.system == KAFKA else "records"
    summary = f"total: {totals['behind']}{'+' if totals.get('capped') else ''} {unit} behind over " \
              f"{totals['measured']} {what}"
    if totals["maxBehindAt"]:
        summary += f" (max {totals['maxBehind']} at {totals['maxBehindAt']})"
    if totals.get("maxMillisBehindLatest") is not None:
        summary += f", at most {totals['maxMillisBehindLatest']} ms behind latest"
    if totals["measured"] < totals["rows"]:
        summary += f"; {totals['rows'] - totals['measured']} not measured"
    batch = f"batch {report.batch_id}, " if report.batch_id is not None else ""
    summary += f"\ncommitted: {batch}{iso_ms(report.committed_at_ms)}; measured {iso_ms(report.measured_at_ms)}"
    return table + "\n" + summary


def lag(args: argparse.Namespace) -> Outcome:
    from .. import lag as lagmod

    store = _open(args)
    checkpoint = CheckpointMirror(store).read()
    if checkpoint is None:
        raise CommandError(f"no committed positions mirrored for {_where(args)}: the query has not committed a "
                           "batch yet (Spark commits a batch when it plans the next one)")
    warnings: list[str] = []
    if args.bootstrap is not None:
        from ...kafka.driver.admin import KafkaAdmin

        conf = {k: v for k, v in args.kafka_properties}
        conf["bootstrap.servers"] = args.bootstrap
        admin = KafkaAdmin(conf, api_timeout_ms=args.timeout * 1000)
        try:
            report = lagmod.kafka_lag_from(checkpoint, admin, _current_job_model(store))
        finally:
            admin.close()
        if not report.rows:
            warnings.append("the checkpoint mirror holds no Kafka partition: is this a samza-kafka job?")
    else:
        report = _kinesis_lag(args, checkpoint, lagmod, warnings)
    for row in report.rows:
        if row.behind is None:
            warnings.append(f"{row.shard or row.ssp.key}: not measured: {row.note}")
    data = {**_header(args), **report.to_json()}
    data["committedAt"] = iso_ms(report.committed_at_ms)
    data["measuredAt"] = iso_ms(report.measured_at_ms)
    code = 0 if report.complete and report.rows else 1
    return Outcome(data, _lag_table(report), code=code, warnings=warnings)


def _kinesis_lag(args: argparse.Namespace, checkpoint, lagmod, warnings: list[str]):
    from ...kinesis.client import AwsClientSettings, kinesis_client
    from ...kinesis.driver.admin import KinesisAdmin

    slot_shards = None
    if args.checkpoint:
        log, parse, accept = _kinesis_offsets(args.checkpoint, args.stream)

        def shards_of(offset):
            return lambda task, ssp: offset.shards_in_slot(task, ssp)

        # The mirror's task records were all computed at the latest commit from that batch's offset: the newest
        # offset whose slot -> shards mapping agrees with every mirrored slot is that one (or maps the same).
        match = None
        newest = None
        for found in log.offsets(parse, limit=_JOB_MODEL_HISTORY):
            if not accept(found.offset):
                continue
            newest = newest or found
            if lagmod.slot_mapping_matches(checkpoint, args.stream, shards_of(found.offset)):
                match = found
                break
        if match is None:
            if newest is None:
                newest = log.latest(parse, accept)  # raises, naming what the location holds
            match = newest
            warnings.append(f"no offset in the checkpoint location maps the committed slots to the same shards; "
                            f"using the newest one (Spark batch {match.batch_id})")
        slot_shards = shards_of(match.offset)

    settings = AwsClientSettings(region=args.region, endpoint_url=args.endpoint)
    admin = KinesisAdmin(kinesis_client(settings), settings=settings)

    def measure(shard, position):
        return lagmod.measure_shard_backlog(admin, args.stream, shard, position, max_records=args.max_records)

    report = lagmod.kinesis_lag(checkpoint, args.stream, measure, slot_shards)
    if not report.rows:
        warnings.append(f"the checkpoint mirror holds no position of Kinesis stream {args.stream!r}")
    return report


# ---- stream consumers (enhanced fan-out) ---------------------------------------------------------------------


def _job_consumers(args: argparse.Namespace, store) -> list[dict[str, Any]]:
    """The consumers the job's store remembers (of ``--stream`` when given), sorted by stream and name."""
    found = [v for v in store.list(STREAM_CONSUMERS).values() if isinstance(v, dict)]
    if args.stream is not None:
        found = [v for v in found if v.get("stream") == args.stream]
    return sorted(found, key=lambda v: (str(v.get("stream")), str(v.get("name"))))


def _kinesis_calls(args: argparse.Namespace):
    from ...kinesis.calls import KinesisCalls
    from ...kinesis.client import AwsClientSettings, kinesis_client

    settings = AwsClientSettings(region=args.region, endpoint_url=args.endpoint)
    return KinesisCalls(kinesis_client(settings), settings=settings)


def _status_in_kinesis(calls, arn: str) -> str:
    """The consumer's status now (``ACTIVE``, ``CREATING``, ``DELETING``), or ``gone``."""
    from botocore.exceptions import ClientError

    from ...kinesis.calls import error_code

    try:
        described = calls.call(f"DescribeStreamConsumer {arn}", calls.client.describe_stream_consumer,
                               ConsumerARN=arn)
    except ClientError as err:
        if error_code(err) == "ResourceNotFoundException":
            return "gone"
        raise CommandError(f"DescribeStreamConsumer of {arn} failed: {err}") from None
    return str(described["ConsumerDescription"]["ConsumerStatus"])


def consumers_list(args: argparse.Namespace) -> Outcome:
    store = _open(args)
    consumers = _job_consumers(args, store)
    calls = _kinesis_calls(args) if consumers else None
    rows = [{**c, "statusNow": _status_in_kinesis(calls, str(c["arn"]))} for c in consumers]
    text = render_table(["stream", "consumer", "status", "ARN"],
                        [[cell(r.get("stream")), cell(r.get("name")), r["statusNow"], cell(r.get("arn"))]
                         for r in rows]) if rows else f"no stream consumer recorded for {_where(args)}"
    warnings = [] if rows else ["a job records its consumer when a query with consumerType=SubscribeToShard starts"]
    return Outcome({**_header(args), "consumers": rows}, text, warnings=warnings)


def consumers_deregister(args: argparse.Namespace) -> Outcome:
    from botocore.exceptions import ClientError

    from ...kinesis.calls import error_code

    store = _open(args)
    matching = [c for c in _job_consumers(args, store) if c.get("name") == args.name]
    if not matching:
        raise CommandError(f"{_where(args)} has no stream consumer named {args.name!r}"
                           + (f" on stream {args.stream!r}" if args.stream else "")
                           + " ('samza-source consumers list' shows them)")
    if len(matching) > 1:
        raise UsageError(f"consumer {args.name!r} is recorded for several streams "
                         f"({', '.join(str(c.get('stream')) for c in matching)}): name one with --stream")
    consumer = matching[0]
    calls = _kinesis_calls(args)
    try:
        calls.call(f"DeregisterStreamConsumer {consumer['arn']}", calls.client.deregister_stream_consumer,
                   ConsumerARN=consumer["arn"])
        gone = False
    except ClientError as err:
        if error_code(err) != "ResourceNotFoundException":
            raise CommandError(f"DeregisterStreamConsumer of {consumer['arn']} failed: {err}") from None
        gone = True
    store.delete(STREAM_CONSUMERS, f"{consumer['stream']}/{consumer['name']}")
    what = "was already gone" if gone else "deregistered"
    text = (f"stream consumer {consumer['name']!r} of stream {consumer['stream']!r} ({consumer['arn']}) {what}; a "
            "query still configured with it registers it again when it starts")
    return Outcome({**_header(args), "deregistered": consumer, "alreadyGone": gone}, text)


COMMANDS = {
    ("consumers", "list"): consumers_list,
    ("consumers", "deregister"): consumers_deregister,
    ("startpoint", "set"): startpoint_set,
    ("startpoint", "get"): startpoint_get,
    ("startpoint", "delete"): startpoint_delete,
    ("startpoint", "list"): startpoint_list,
    ("jobmodel", "show"): jobmodel_show,
    ("checkpoint", "show"): checkpoint_show,
    ("lag", None): lag,
}


def run(args: argparse.Namespace) -> Outcome:
    return COMMANDS[(args.group, getattr(args, "command", None))](args)
