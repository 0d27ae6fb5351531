"""The metadata store's namespaces (and their fixed keys), named once for the product and the CLI alike.

A job's records live under ``<job.name>/<namespace>/<key>``. A namespace renamed in one writer but not in its
readers would lose a job's state without an error, so every module that reads or writes one imports it from here
(the CLI too, which must not import the driver modules that write them).
"""

from __future__ import annotations

__all__ = [
    "BATCH_ENDS", "CHECKPOINTS", "JOB_MODEL", "JOB_MODEL_CURRENT", "JOB_MODEL_PREVIOUS", "LEASE", "LEASE_KEY",
    "NAMESPACES", "SHARD_TASKS", "STARTPOINTS", "STREAM_CONSUMERS", "VALUE_CHUNKS",
]

#: samza-kafka's job model (task -> SSPs), under the keys below
JOB_MODEL = "jobmodel"
JOB_MODEL_CURRENT = "current"
#: the job model before the last regrouping, kept so the CLI can show what changed
JOB_MODEL_PREVIOUS = "previous"
#: SEP-18 startpoints, one key per SSP (and task) they re-position
STARTPOINTS = "startpoint"
#: the committed positions mirrored per task, for tools (``core/checkpoint.py``)
CHECKPOINTS = "checkpoint"
#: the job lease: one query per job name and store (``metadata/lease.py``)
LEASE = "owner"
LEASE_KEY = "driver"
#: samza-kinesis: where each micro-batch ended per shard, recorded by the task that read it
BATCH_ENDS = "kinesis-batch-ends"
#: samza-kinesis: the committed offset's shard -> task map, which a batch read with ``job.name`` reuses
SHARD_TASKS = "shard-tasks"

#: samza-kinesis: the stream consumers (enhanced fan-out) the job read through, key ``<stream>/<consumer name>``,
#: so ``samza-source consumers`` can list and deregister them (the source never deregisters one itself)
STREAM_CONSUMERS = "kinesis-consumers"
#: the chunks of values too large for one record (``core/large_values.py``), key
#: ``<namespace>/<key>/<version id>/<index>``; a damaged chunk is its owner's damage, under its owner's rule
VALUE_CHUNKS = "value-chunks"
NAMESPACES = (JOB_MODEL, STARTPOINTS, CHECKPOINTS, LEASE, BATCH_ENDS, SHARD_TASKS, STREAM_CONSUMERS, VALUE_CHUNKS)
