"""The names of the options both sources share: every Samza job has a name, a metadata store, startpoints, an
owner and a data-loss policy, whichever system it reads.

Each name is defined here once and imported wherever it is parsed, checked, translated (``samza_config/``) or named in
a message, so a rename cannot miss a place (a unit test fails when an option name is written as a literal in two
product modules, or named inside a message outside its defining module). System-specific names live in
``kafka/options.py`` and ``kinesis/options.py``; defaults live beside the code that uses them. A leaf module: it
imports nothing, so ``core/`` may use it and stay pure.
"""

from __future__ import annotations

#: names the job's startpoints, job model, checkpoint mirror and lease in the metadata store
JOB_NAME_OPTION = "job.name"
#: the metadata store URI (``metadata/__init__.py`` opens it)
METADATA_STORE_OPTION = "metadata.store"
#: how long a startpoint stays applicable after it was written
STARTPOINT_TTL_OPTION = "startpoint.ttl"
#: how often the driver looks for new startpoints
STARTPOINT_POLL_INTERVAL_OPTION = "startpoint.pollInterval"
#: how long the job-ownership lease lives without renewal (``metadata/lease.py``)
JOB_OWNERSHIP_TTL_OPTION = "job.ownership.ttl"
#: fail the query (true) or skip and report (false) when data is gone
FAIL_ON_DATA_LOSS_OPTION = "failOnDataLoss"
#: how long an endpoint that does not answer is retried before the query fails
RETRY_TIMEOUT_OPTION = "endpoint.retryTimeout"
#: the SSP grouper (``core/grouping.py``)
GROUPER_OPTION = "grouper"
#: SEP-5's partition expansion algorithm (``core/expansion.py``)
EXPANSION_ALGORITHM_OPTION = "expansion.algorithm"
#: broadcast inputs read by every task (``core/broadcast.py``)
BROADCAST_OPTION = "task.broadcast.inputs"
#: co-partitioned stream groups (``core/copartition.py``)
COPARTITION_OPTION = "copartition"
#: test-only: the dotted path of the module that implements the fault-injection hooks (``source/fault_hooks.py``);
#: every other option under :data:`TESTING_OPTIONS_PREFIX` is the hooks' own and needs it
FAULT_HOOKS_OPTION = "testing.faultHooks"
TESTING_OPTIONS_PREFIX = "testing."

# Spark's Kafka source has these; neither source does (a Spark input partition is one Samza task): each system's
# options.py refuses them with its reason and alternative (source/option_names.py)
MIN_PARTITIONS_OPTION = "minPartitions"
MAX_RECORDS_PER_PARTITION_OPTION = "maxRecordsPerPartition"

__all__ = [
    "BROADCAST_OPTION", "COPARTITION_OPTION", "EXPANSION_ALGORITHM_OPTION", "FAIL_ON_DATA_LOSS_OPTION",
    "FAULT_HOOKS_OPTION", "GROUPER_OPTION", "JOB_NAME_OPTION", "JOB_OWNERSHIP_TTL_OPTION", "METADATA_STORE_OPTION",
    "MAX_RECORDS_PER_PARTITION_OPTION", "MIN_PARTITIONS_OPTION",
    "RETRY_TIMEOUT_OPTION", "STARTPOINT_POLL_INTERVAL_OPTION", "STARTPOINT_TTL_OPTION", "TESTING_OPTIONS_PREFIX",
]
