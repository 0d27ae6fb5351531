"""``samza-source startpoint set | get | delete | list``: startpoints in the job's metadata store."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

from ....core.checkpoint import CheckpointMirror
from ....core.errors import StartpointFormatError
from ....core.model import SystemStreamPartition, TaskName
from ....core.startpoint import (
    Startpoint,
    StartpointOldest,
    StartpointSpecific,
    StartpointTimestamp,
    StartpointUpcoming,
)
from ....core.startpoint_manager import StartpointManager, parse_startpoint_key, startpoint_key
from ....options.common import STARTPOINT_POLL_INTERVAL
from ....options.namespaces import (
    STARTPOINTS,
)
from .. import errors
from ..render import iso_ms, render_table
from .common import KAFKA, KINESIS, Outcome, _current_job_model, _header, _kinesis_offsets, _open, _where


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
        raise errors.shard_has_no_slot(args.shard, args.stream, found.batch_id, args.checkpoint, why, mapped)
    shard_task = offset.task_of(args.shard)
    if task is not None and task != shard_task:
        raise errors.shard_not_in_task(args.shard, shard_task, ssp.partition, task)
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
    found = store.scan(STARTPOINTS)
    entries: list[dict[str, Any]] = []
    malformed: list[dict[str, Any]] = [{"key": bad.location, "error": str(bad.error), "value": None}
                                       for bad in found.damaged]
    for key, raw in sorted(found.values.items()):
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
        from ....kafka.driver.startpoints import kafka_startpoint_problem

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
            raise errors.no_job_model_for_topic(_where(args), args.topic)
        ssps = sorted(ssp for ssp in model.ssps() if ssp.system == KAFKA and ssp.stream == args.topic)
        if not ssps:
            topics = sorted({ssp.stream for ssp in model.ssps() if ssp.system == KAFKA})
            raise errors.topic_not_in_job_model(args.topic, _where(args), topics)
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
        raise errors.no_slot_with_shards(args.stream, found.batch_id, args.checkpoint)
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


def _placement_warnings(args: argparse.Namespace, store: Any, sel: Selected) -> list[str]:
    """Whether the job reads the selected SSP (and task), in the same words for both systems: a startpoint for a
    partition, slot or stream the job does not read waits for its TTL and is never applied."""
    tasks = _job_tasks(args, store, sel.ssp.system)
    if tasks is None:
        return [f"nothing is stored yet for {_where(args)}: check --store and --job (the startpoint is stored anyway "
                "and applies when the query plans a batch)"]
    holders = [task for task, ssps in tasks.items() if sel.ssp in ssps]
    if not holders:
        return [f"{sel.ssp} is not in the job's current job model: the startpoint is kept until a job model holds it"]
    if sel.task is not None and sel.task not in holders:
        return [f"task {sel.task} does not hold {sel.ssp} in the current job model (held by "
                f"{', '.join(t.name for t in holders)}): the startpoint is kept until it does"]
    return []


JobTasks = dict[TaskName, frozenset[SystemStreamPartition]]


def _job_tasks(args: argparse.Namespace, store: Any, system: str) -> JobTasks | None:
    """task -> SSPs of the job as far as this tool can know it, None when nothing says: samza-kafka's stored job
    model; samza-kinesis' newest offset (``--checkpoint``), else the slots its checkpoint mirror holds."""
    if system == KAFKA:
        model = _current_job_model(store)
        if model is not None:
            return dict(model.tasks)
    elif args.checkpoint is not None:
        log, parse, accept = _kinesis_offsets(args.checkpoint, args.stream)
        return dict(log.latest(parse, accept).offset.job_model.tasks)
    mirror = CheckpointMirror(store).read()
    if mirror is None:
        return None
    return {task: frozenset(positions) for task, positions in mirror.positions.items()}


def startpoint_set(args: argparse.Namespace) -> Outcome:
    if args.partition is None and args.shard is None and args.slot is None:
        return _startpoint_set_every(args)
    sel = _select(args)
    startpoint = _build_startpoint(args)
    warnings = []
    if isinstance(startpoint, StartpointSpecific) and sel.shards_in_slot is not None and len(sel.shards_in_slot) > 1:
        raise errors.slot_overloaded(sel.ssp.partition, sel.shards_in_slot)
    if sel.shards_in_slot is not None and len(sel.shards_in_slot) > 1:
        warnings.append(f"slot {sel.ssp.partition} holds shards {', '.join(sel.shards_in_slot)}: the startpoint "
                        "applies to all of them")
    store = _open(args)
    warnings.extend(_placement_warnings(args, store, sel))
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
