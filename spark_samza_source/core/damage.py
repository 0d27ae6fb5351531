"""What a damaged record in the metadata store does, per stored kind: the one rule of docs/guarantees.md.

A record is damaged when the store cannot read it (a torn or hand-edited file, random bytes, another key's or
another job's record, a newer release's format) or when it reads but is not a record of its kind. Each kind gets
one verdict, chosen by what losing or misreading it would cost:

- ``FAIL``: the reader stops, naming the store location, the kind, what is wrong and the repair, because going on
  would read records twice, lose them, or put them in another task than the streaming query did;
- ``SKIP``: the reader leaves the record out with one WARN and a progress entry and goes on, because the record
  only re-positions or mirrors what the query's own checkpoint already holds.

Either way a damaged record never hides the valid records of its kind (stores list them apart:
``MetadataStore.scan``) and is never rewritten over without a WARN naming it. ``samza-source check`` reports every
damaged record of a job with its kind's verdict and repair.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..options.namespaces import BATCH_ENDS, CHECKPOINTS, JOB_MODEL, LEASE, SHARD_TASKS, STARTPOINTS
from .errors import InternalError

__all__ = ["DamageRule", "KCL_LEASE_MIRROR_RULE", "KCL_LEASE_START_RULE", "RULES", "Verdict", "rule_for_namespace"]


class Verdict(enum.Enum):
    FAIL = "fail"
    SKIP = "skip"


@dataclass(frozen=True)
class DamageRule:
    """One stored kind's verdict on a damaged record, why, and what repairs it."""

    kind: str
    namespace: str
    verdict: Verdict
    #: what losing or misreading the record would cost: the reason for the verdict
    cost: str
    #: the command or option an operator runs to repair it
    repair: str


RULES: tuple[DamageRule, ...] = (
    DamageRule(
        "job model", JOB_MODEL, Verdict.FAIL,
        "a misread model regroups the tasks: state kept per task would meet records of other partitions",
        "set jobModel.reset=true to replace it (regroups; state per task is lost), or restore the file",
    ),
    DamageRule(
        "startpoint", STARTPOINTS, Verdict.SKIP,
        "a lost startpoint only leaves its partition where the checkpoint has it; stopping would also block "
        "every valid startpoint",
        "samza-source startpoint delete (or delete the file, object or item named) and write it again",
    ),
    DamageRule(
        "checkpoint mirror", CHECKPOINTS, Verdict.SKIP,
        "the mirror is a copy for tools; the query's own checkpoint (Spark's offset log) is not affected",
        "delete the record named: the query's next commit writes it again",
    ),
    DamageRule(
        "job lease", LEASE, Verdict.FAIL,
        "a misread lease could let two queries of one job.name read and commit at once",
        "stop every query of this job.name, then delete the record named (key owner/driver)",
    ),
    DamageRule(
        "shard tasks", SHARD_TASKS, Verdict.FAIL,
        "a batch read that regroups puts records in other tasks than the streaming query did",
        "run the streaming query for one batch (it writes the record again), or delete the record named to let "
        "the batch read make its own tasks",
    ),
    DamageRule(
        "batch ends", BATCH_ENDS, Verdict.FAIL,
        "a misread end reads another range than the batch's first attempt: records twice or never",
        "delete the record named and restart the query from its checkpoint (the batch is read again)",
    ),
)

#: KCL lease rows live in the KCL application's DynamoDB table, not in the metadata store: two readers, two verdicts
KCL_LEASE_TABLE = "(KCL lease table)"
KCL_LEASE_START_RULE = DamageRule(
    "KCL lease row, read to start from", KCL_LEASE_TABLE, Verdict.FAIL,
    "a misread KCL checkpoint starts its shard elsewhere than the KCL application stopped: records twice or never",
    "correct the row's attribute named (checkpoint: a sequence number or TRIM_HORIZON, LATEST, AT_TIMESTAMP, "
    "SHARD_END; checkpointSubSequenceNumber and leaseCounter: numbers), or delete the row: a shard without a row "
    "starts at TRIM_HORIZON, as a KCL worker's would",
)
KCL_LEASE_MIRROR_RULE = DamageRule(
    "KCL lease row, mirrored to", KCL_LEASE_TABLE, Verdict.SKIP,
    "the mirror is a copy for a KCL application; the query's own checkpoint is Spark's",
    "delete the row named (or correct the attribute named): the query's next commit writes it again",
)

_BY_NAMESPACE = {rule.namespace: rule for rule in RULES}


def rule_for_namespace(namespace: str) -> DamageRule:
    """The rule of the kind stored in ``namespace``; a namespace without one is a bug."""
    try:
        return _BY_NAMESPACE[namespace]
    except KeyError:
        raise InternalError(f"no damage rule for metadata namespace {namespace!r}") from None
