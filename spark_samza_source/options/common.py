"""The options every Samza job has, whichever system it reads (:data:`JOB_OPTIONS`), and the job-model options of a
system whose partitions a grouper assigns to tasks (:data:`GROUPING_OPTIONS`: Kafka's; Kinesis maps shards itself).

Each entry is the one place its name, default and description are written; messages name an option through its
entry (``f"option '{JOB_NAME.name}' ..."``), and the ``DEFAULT_*`` values their defaults, for the
code that needs one without parsing options (the lease, the startpoint manager, the Kinesis client).
"""

from __future__ import annotations

from typing import cast

from .option import Duration, Flag, Namespace, Option, Text

JOB_NAME = Option(
    "job.name", Text("letters, digits and `._@:+=-`"),
    "names the job in the metadata store: its startpoints, job model, checkpoint mirror and lease; a batch read "
    "with it takes the streaming query's tasks",
    default_doc="required (streaming)")
METADATA_STORE = Option(
    "metadata.store", Text("store URI"),
    "where the job's metadata lives, shared by driver and executors: `file:`, `s3://BUCKET/PREFIX?region=..`, "
    "`gs://`, `abfs://`, `hdfs://`, `dynamodb://TABLE?region=..`, `memory:`",
    default="samza-metadata", default_doc="`samza-metadata` (a local directory, with a warning)")
FAIL_ON_DATA_LOSS = Option(
    "failOnDataLoss", Flag(),
    "records gone before they were read (below a partition's log start, an expired shard, a topic or stream "
    "re-created under its name) fail the query naming where; `false` logs, reads on (a re-created stream from "
    "`TRIM_HORIZON`) and reports what this run skipped in the progress's `latestOffset[\"dataLoss\"]`: samza-kafka "
    "`{SSP key: records}` (and `recreatedTopics`: `{topic: new topic ID}`), samza-kinesis `{\"shardsExpired\": "
    "[shard ids], \"shardsClosedWithoutChildren\": [shard ids], \"readsSkipped\": [\"<shard> in batch <n>\"], "
    "\"streamRecreated\": [\"old -> new\"]}`",
    default=True)
STARTPOINT_TTL = Option(
    "startpoint.ttl", Duration(minimum_ms=1),
    "startpoints older than this are ignored (Samza's StartpointManager default)",
    default=12 * 3600 * 1000)
STARTPOINT_POLL_INTERVAL = Option(
    "startpoint.pollInterval", Duration(),
    "how often a running query looks for new startpoints",
    default=10_000)
JOB_LEASE_TTL = Option(
    "job.lease.ttl", Duration(minimum_ms=1000),
    "one query per `job.name` and store: how long a driver's job lease outlives its last renewal (the job lease is "
    "this package's own record in the metadata store, not a KCL lease)",
    default=60_000, deprecated=("job.ownership.ttl",))
RETRY_TIMEOUT = Option(
    "endpoint.retryTimeout", Duration(minimum_ms=1000),
    "how long the driver retries an endpoint that does not answer (refused, reset, timed out, HTTP 5xx, a leader "
    "moving), with backoff, before the query fails naming it: rides out a broker or endpoint restart (a warning is "
    "logged while it retries; an executor's Kafka read is bounded by `kafkaConsumer.pollTimeoutMs`)",
    default=60_000)
FAULT_HOOKS = Option(
    "testing.faultHooks", Text("dotted module path"),
    "test-only: the module implementing the fault-injection hooks; every other `testing.*` option needs it")
#: test-only options of the development kit's fault hooks (``source/fault_hooks.py`` checks them)
TESTING = Namespace("testing.", "test-only options of the development kit's fault hooks; they need "
                                "`testing.faultHooks`")

GROUPER = Option(
    "grouper", Text("grouper name, Samza factory class or dotted path"),
    "the SSP grouper: also `GroupBySystemStreamPartitionFixedTasks`, `GroupByPartition`, "
    "`GroupBySystemStreamPartition`, a Samza factory class name, or a dotted Python path",
    default="GroupByPartitionFixedTasks")
EXPANSION_ALGORITHM = Option(
    "expansion.algorithm", Text("dotted path"),
    "SEP-5's partition expansion algorithm: the dotted path of a `PartitionExpansionAlgorithm`",
    default_doc="`p % initial`")
BROADCAST = Option(
    "task.broadcast.inputs", Text("Samza broadcast list"),
    "Samza syntax `kafka.config#0, kafka.config#[1-3]`: those partitions go to every task; a topic read only as "
    "broadcast input keeps every partition it gains broadcast")
COPARTITION = Option(
    "copartition", Text("groups of streams"),
    "groups of streams joined inside tasks, `orders,payments;clicks,views`: their partition counts are checked "
    "before anything is read")

#: the options both sources take
JOB_OPTIONS = (JOB_NAME, METADATA_STORE, FAIL_ON_DATA_LOSS, STARTPOINT_TTL, STARTPOINT_POLL_INTERVAL,
               JOB_LEASE_TTL, RETRY_TIMEOUT, FAULT_HOOKS)
#: the job-model options of a system whose partitions a grouper assigns to tasks
GROUPING_OPTIONS = (GROUPER, EXPANSION_ALGORITHM, BROADCAST, COPARTITION)

TESTING_OPTIONS_PREFIX = TESTING.prefix

DEFAULT_STARTPOINT_TTL_MS: int = STARTPOINT_TTL.default
DEFAULT_STARTPOINT_POLL_INTERVAL_MS: int = STARTPOINT_POLL_INTERVAL.default
DEFAULT_JOB_LEASE_TTL_MS: int = JOB_LEASE_TTL.default
MIN_JOB_LEASE_TTL_MS: int = cast(Duration, JOB_LEASE_TTL.kind).minimum_ms
DEFAULT_RETRY_TIMEOUT_MS: int = RETRY_TIMEOUT.default

# Spark's Kafka source has these; neither source does (a Spark input partition is one Samza task): each system's
# spec refuses them with its reason and alternative
MIN_PARTITIONS_OPTION = "minPartitions"
MAX_RECORDS_PER_PARTITION_OPTION = "maxRecordsPerPartition"
