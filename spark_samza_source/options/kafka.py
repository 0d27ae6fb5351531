"""Every option of the ``samza-kafka`` source (:data:`KAFKA`): Spark's Kafka option names where the meaning is the
same, the common job options, and the names refused with a reason.

To add an option: declare it here (name, kind, description, default), add it to :data:`KAFKA`, read it in
``kafka/options.py`` with ``ENTRY.read(opts)``, then regenerate ``docs/options.md``
(``python -m spark_samza_source.options.reference > docs/options.md``).
"""

from __future__ import annotations

from .common import (
    GROUPING_OPTIONS,
    JOB_OPTIONS,
    MAX_RECORDS_PER_PARTITION_OPTION,
    MIN_PARTITIONS_OPTION,
    RETRY_TIMEOUT,
    TESTING,
)
from .option import Count, Duration, Flag, Namespace, OneOf, Option, OptionSpec, Text, format_duration

SOURCE = "samza-kafka"

# ---- words some values take ---------------------------------------------------------------------------------------
#: ``startingOffsets`` / ``endingOffsets`` words (anything else is per-partition JSON)
EARLIEST, LATEST = "earliest", "latest"
#: ``expansion.ordering``: new partitions wait until their feeders are drained, or are read at once
DRAIN_FIRST, NO_ORDERING = "drain-first", "none"
#: ``startingOffsetsByTimestampStrategy``: a partition with no record at or after the timestamp fails the query
#: (``error``, Spark's default) or starts at its end (``latest``)
TIMESTAMP_STRATEGY_ERROR, TIMESTAMP_STRATEGY_LATEST = "error", "latest"
TIMESTAMP_STRATEGIES = (TIMESTAMP_STRATEGY_ERROR, TIMESTAMP_STRATEGY_LATEST)
#: readPath values: which executor reader (the native one in C over librdkafka, or the Python one)
READ_PATHS = ("auto", "native", "python")

# ---- what is read ---------------------------------------------------------------------------------------------------
BOOTSTRAP_SERVERS = Option(
    "kafka.bootstrap.servers", Text("host:port list"),
    "the brokers, e.g. `broker1:9092,broker2:9092`; every other `kafka.*` option goes to librdkafka",
    default_doc="required")
SUBSCRIBE = Option(
    "subscribe", Text("comma-separated topics"),
    "the topics to read; exactly one of `subscribe`, `subscribePattern`, `assign` is set",
    default_doc="one of three")
SUBSCRIBE_PATTERN = Option(
    "subscribePattern", Text("regular expression"),
    "the topics matching it, re-evaluated every trigger (topics that appear start at earliest)",
    default_doc="one of three")
ASSIGN = Option(
    "assign", Text('JSON `{"orders":[0,1]}`'),
    "exactly these partitions",
    default_doc="one of three")
DROP_TOPICS = Option(
    "dropTopics", Text("comma-separated topics"),
    "topics that may leave the job (deleted, or no longer subscribed): their positions and tasks are forgotten; "
    "without it a topic that left fails the query naming this option")

# ---- job model and partition expansion ---------------------------------------------------------------------------
EXPANSION_ORDERING = Option(
    "expansion.ordering", OneOf((DRAIN_FIRST, NO_ORDERING)),
    "`drain-first` reads a new partition only after the partitions feeding it are drained up to the growth; "
    "`none` reads it at once",
    default=DRAIN_FIRST)
#: Producers learn of new partitions only when they refresh their metadata: the Java client's metadata.max.age.ms
#: and librdkafka's topic.metadata.refresh.interval.ms both default to 5 minutes, and until then they write keys
#: to their old partitions. Five minutes covers producers left at those defaults.
EXPANSION_SETTLE = Option(
    "expansion.settleTime", Duration(),
    "how long after a growth is seen the old partitions keep being drained before the cut: your producers' "
    "metadata refresh (`metadata.max.age.ms`, `topic.metadata.refresh.interval.ms`)",
    default=5 * 60_000)
JOB_MODEL_RESET = Option(
    "jobModel.reset", Flag(),
    "a new checkpoint starts from the job model stored for `job.name` (same tasks); `true` regroups instead",
    default=False)

# ---- where a query starts, and how much a micro-batch reads ------------------------------------------------------
STARTING_OFFSETS = Option(
    "startingOffsets", Text('`earliest`, `latest` or JSON `{"orders":{"0":23,"1":-2}}`'),
    "where a new checkpoint starts (-2 earliest, -1 latest per partition); Startpoints re-position later. An "
    "offset below the log start is data loss (`failOnDataLoss`); entries naming partitions or topics the query "
    "does not read, or offsets beyond the log end, fail naming them",
    default=LATEST, default_doc="`latest` (batch: `earliest`)")
STARTING_TIMESTAMP = Option(
    "startingTimestamp", Text("epoch ms"),
    "a new checkpoint starts at each partition's first record at or after this time")
STARTING_OFFSETS_BY_TIMESTAMP = Option(
    "startingOffsetsByTimestamp", Text('JSON `{"orders":{"0":1700000000000}}`'),
    "as `startingTimestamp`, per partition")
STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY = Option(
    "startingOffsetsByTimestampStrategy", OneOf(TIMESTAMP_STRATEGIES),
    "a partition with no record at or after the time fails the query (`error`) or starts at its end",
    default=TIMESTAMP_STRATEGY_ERROR)
MAX_OFFSETS_PER_TRIGGER = Option(
    "maxOffsetsPerTrigger", Count(minimum=1),
    "rows per micro-batch, split across partitions in proportion to their backlog")
MIN_OFFSETS_PER_TRIGGER = Option(
    "minOffsetsPerTrigger", Count(minimum=1),
    "a micro-batch waits for at least this many rows, unless `maxTriggerDelay` passed")
MAX_TRIGGER_DELAY = Option(
    "maxTriggerDelay", Duration(),
    "the longest a micro-batch waits for `minOffsetsPerTrigger`",
    default=15 * 60 * 1000)

# ---- what a row holds, and the executors' reads --------------------------------------------------------------------
INCLUDE_HEADERS = Option(
    "includeHeaders", Flag(),
    "adds the column `headers array<struct<key:string,value:binary>>`",
    default=False)
MAX_ROWS_PER_ARROW_BATCH = Option(
    "maxRowsPerArrowBatch", Count(minimum=1),
    "rows per Arrow batch handed to Spark",
    default=10_000)
POLL_TIMEOUT = Option(
    "kafkaConsumer.pollTimeoutMs", Duration(minimum_ms=1),
    "how long an executor's read waits for the broker before it fails",
    default=120_000)
READ_PATH = Option(
    "readPath", OneOf(READ_PATHS),
    "the executors' Kafka reader: `auto` the native one (C over librdkafka, in the platform wheel) where it can "
    "run, else the Python one, logged once per executor process at INFO; `native` fails a read where the native "
    "reader cannot run, saying why; `python` always the Python one",
    default="auto")

# ---- consumer group and security ---------------------------------------------------------------------------------
COMMIT_OFFSETS_TO_KAFKA = Option(
    "commitOffsetsToKafka", Flag(),
    "mirror committed positions to the consumer group, so standard lag tools work",
    default=True)
KAFKA_GROUP_ID = Option(
    "kafka.group.id", Text("consumer group"),
    "the consumer group committed positions are mirrored to (not together with `groupIdPrefix`)",
    default_doc="`<groupIdPrefix>-<job.name>`")
GROUP_ID_PREFIX = Option(
    "groupIdPrefix", Text("prefix"),
    "prefix of the default consumer group `<groupIdPrefix>-<job.name>`",
    default="samza")
OAUTHBEARER_TOKEN_PROVIDER = Option(
    "kafka.sasl.oauthbearer.tokenProvider", Text("dotted path"),
    "a Python function giving SASL/OAUTHBEARER tokens, called as librdkafka's `oauth_cb` on driver and executors")

# ---- batch reads (spark.read) --------------------------------------------------------------------------------------
ENDING_OFFSETS = Option(
    "endingOffsets", Text('`latest` or JSON `{"orders":{"0":100,"1":-1}}`'),
    "where a batch read ends (exclusive; -1 latest per partition)",
    default=LATEST, bounded_only=True)
ENDING_TIMESTAMP = Option(
    "endingTimestamp", Text("epoch ms"),
    "a batch read ends at each partition's first record at or after this time (exclusive), else at its end",
    bounded_only=True)
ENDING_OFFSETS_BY_TIMESTAMP = Option(
    "endingOffsetsByTimestamp", Text('JSON `{"orders":{"0":1700000000000}}`'),
    "as `endingTimestamp`, per partition",
    bounded_only=True)

#: the librdkafka pass-through: ``kafka.<property>`` goes to the client as ``<property>``, checked by librdkafka
CLIENT = Namespace("kafka.", "librdkafka configuration properties, passed on without the prefix (Java client "
                             "names are translated); librdkafka checks the names and values at `load()`")

# ---- refused: what Spark's Kafka source has and this one deliberately does not --------------------------------------
_ONE_TASK_PER_PARTITION = (
    "a Spark input partition is one Samza task, which reads its partitions in order, so a range is never split "
    "across Spark tasks (that would break per-key order and task identity). For more parallelism add partitions "
    "to the topic, or repartition() the DataFrame after load(); remove the option")
_FETCH_RETRIES = (
    f"calls to the cluster are retried with backoff for a time rather than a count; set '{RETRY_TIMEOUT.name}' "
    f"(default {format_duration(RETRY_TIMEOUT.default)}) instead")
FETCH_OFFSET_NUM_RETRIES_OPTION = "fetchOffset.numRetries"
FETCH_OFFSET_RETRY_INTERVAL_OPTION = "fetchOffset.retryIntervalMs"
REFUSED = {
    MIN_PARTITIONS_OPTION: _ONE_TASK_PER_PARTITION,
    MAX_RECORDS_PER_PARTITION_OPTION: _ONE_TASK_PER_PARTITION,
    FETCH_OFFSET_NUM_RETRIES_OPTION: _FETCH_RETRIES,
    FETCH_OFFSET_RETRY_INTERVAL_OPTION: _FETCH_RETRIES,
}
#: librdkafka settings refused under ``kafka.`` (Spark's Kafka source refuses them for the same reasons: the source
#: manages groups and offsets itself)
REFUSED_CLIENT_SETTINGS = {
    "enable.auto.commit": "offsets are tracked in Spark's checkpoint; Kafka auto-commit would record progress "
    "Spark has not made. Remove 'kafka.enable.auto.commit'",
    "auto.offset.reset": "use 'startingOffsets' for a new query and Startpoints to re-position a running one; "
    "remove 'kafka.auto.offset.reset'",
    "key.deserializer": "keys are always returned as binary; cast in Spark instead",
    "value.deserializer": "values are always returned as binary; cast in Spark instead",
}

KAFKA = OptionSpec(
    source=SOURCE,
    options=(
        BOOTSTRAP_SERVERS, SUBSCRIBE, SUBSCRIBE_PATTERN, ASSIGN, *JOB_OPTIONS, *GROUPING_OPTIONS,
        EXPANSION_ORDERING, EXPANSION_SETTLE, JOB_MODEL_RESET, DROP_TOPICS,
        STARTING_OFFSETS, STARTING_TIMESTAMP, STARTING_OFFSETS_BY_TIMESTAMP, STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY,
        MAX_OFFSETS_PER_TRIGGER, MIN_OFFSETS_PER_TRIGGER, MAX_TRIGGER_DELAY,
        INCLUDE_HEADERS, MAX_ROWS_PER_ARROW_BATCH, POLL_TIMEOUT, READ_PATH,
        COMMIT_OFFSETS_TO_KAFKA, KAFKA_GROUP_ID, GROUP_ID_PREFIX, OAUTHBEARER_TOKEN_PROVIDER,
        ENDING_OFFSETS, ENDING_TIMESTAMP, ENDING_OFFSETS_BY_TIMESTAMP,
    ),
    namespaces=(CLIENT, TESTING),
    refused=REFUSED,
)

# the names, for messages (f"option '{STARTING_OFFSETS.name}' ...")
KAFKA_CLIENT_OPTIONS_PREFIX = CLIENT.prefix
BOUNDED_ONLY_OPTIONS = KAFKA.bounded_only()
