"""``samza-source lag``: how far a job is behind, from the checkpoint and the brokers or Kinesis."""

from __future__ import annotations

import argparse

from ....core.checkpoint import CheckpointMirror
from .. import errors
from ..render import iso_ms, render_table
from .common import _JOB_MODEL_HISTORY, KAFKA, Outcome, _current_job_model, _header, _kinesis_offsets, _open, _where

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
    from ... import lag as lagmod

    store = _open(args)
    checkpoint = CheckpointMirror(store).read()
    if checkpoint is None:
        raise errors.no_committed_positions(_where(args))
    warnings: list[str] = []
    if args.bootstrap is not None:
        from ....kafka.driver.admin import KafkaAdmin

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
    from ....kinesis.client import AwsClientSettings, kinesis_client
    from ....kinesis.driver.admin import KinesisAdmin

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
