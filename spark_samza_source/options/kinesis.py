"""Every option of the ``samza-kinesis`` source (:data:`KINESIS`): the AWS connector's names where the meaning is the
same (and its ``kinesis.*`` spellings accepted as aliases), the common job options, and the names refused with a
reason.

To add an option: declare it here (name, kind, description, default; the AWS connector's name as an alias if it has
one), add it to :data:`KINESIS`, read it in ``kinesis/options.py`` with ``ENTRY.read(opts)``, then regenerate
``docs/options.md`` (``python -m spark_samza_source.options.reference > docs/options.md``).
"""

from __future__ import annotations

from .common import (
    FAIL_ON_DATA_LOSS,
    JOB_OPTIONS,
    MAX_RECORDS_PER_PARTITION_OPTION,
    METADATA_STORE,
    MIN_PARTITIONS_OPTION,
    RETRY_TIMEOUT,
    TESTING,
)
from .option import Count, Duration, OneOf, Option, OptionSpec, Text, format_duration

SOURCE = "samza-kinesis"

#: ``startingPosition`` / ``endingPosition`` words (upper-cased; ``EARLIEST`` means ``TRIM_HORIZON``; anything else
#: is per-shard JSON)
LATEST, TRIM_HORIZON, AT_TIMESTAMP, KCL = "LATEST", "TRIM_HORIZON", "AT_TIMESTAMP", "KCL"
#: ``assignment``: a new shard joins its parent's task, or the least-loaded one (KCL style)
LINEAGE, BALANCED = "lineage", "balanced"
#: ``consumerType``: ``GetRecords`` polling, or enhanced fan-out through a registered stream consumer
GET_RECORDS_CONSUMER, SUBSCRIBE_TO_SHARD_CONSUMER = "GetRecords", "SubscribeToShard"

# ---- what is read, and how clients reach it -----------------------------------------------------------------------
STREAM_NAME = Option(
    "streamName", Text("stream name"),
    "the Kinesis data stream to read",
    default_doc="required", aliases=("kinesis.streamName",))
REGION = Option(
    "region", Text("AWS region"),
    "the stream's region",
    default_doc="boto3's default", aliases=("kinesis.region", "kinesis.kinesisRegion"))
ENDPOINT_URL = Option(
    "endpointUrl", Text("http(s) URL"),
    "the Kinesis endpoint (a VPC endpoint, an emulator)",
    default_doc="boto3's", aliases=("kinesis.endpointUrl",))
DYNAMODB_ENDPOINT_URL = Option(
    "dynamodbEndpointUrl", Text("http(s) URL"),
    "the DynamoDB endpoint of the `kcl.leaseTable` mirror",
    default_doc="`endpointUrl`'s value")
ACCESS_KEY_ID = Option(
    "awsAccessKeyId", Text("access key id"),
    "static credentials, with `awsSecretKey` (and `sessionToken`)",
    default_doc="boto3's default chain", aliases=("kinesis.awsAccessKeyId",))
SECRET_KEY = Option(
    "awsSecretKey", Text("secret key"),
    "the secret of `awsAccessKeyId`",
    default_doc="boto3's default chain", aliases=("kinesis.awsSecretKey",))
SESSION_TOKEN = Option(
    "sessionToken", Text("session token"),
    "the session token of temporary credentials",
    aliases=("kinesis.sessionToken",))
ROLE_ARN = Option(
    "roleArn", Text("IAM role ARN"),
    "a role assumed (through STS) for every call",
    aliases=("kinesis.stsRoleArn",))
ROLE_SESSION_NAME = Option(
    "roleSessionName", Text("session name (at most 64 characters kept)"),
    "the session name `roleArn` is assumed with",
    default_doc="`samza-<job.name>`", aliases=("kinesis.stsSessionName",))
STS_ENDPOINT_URL = Option(
    "stsEndpointUrl", Text("http(s) URL"),
    "the STS endpoint `roleArn` is assumed through",
    default_doc="boto3's for the region", aliases=("kinesis.stsEndpointUrl",))
CONSUMER_TYPE = Option(
    "consumerType", OneOf((GET_RECORDS_CONSUMER, SUBSCRIBE_TO_SHARD_CONSUMER)),
    "how tasks read shards: `GetRecords` polling (shares each shard's 5 reads/s and 2 MB/s with every other reader) "
    "or enhanced fan-out, `SubscribeToShard` (a registered consumer with its own 2 MB/s per shard; needs "
    "`consumerName`). Positions, tasks and guarantees are the same; a checkpoint may switch between them",
    default=GET_RECORDS_CONSUMER, aliases=("kinesis.consumerType",))
CONSUMER_NAME = Option(
    "consumerName", Text("stream consumer name (1-128 of letters, digits, `_`, `.`, `-`)"),
    "the stream consumer enhanced fan-out reads through: registered when absent, reused when present, never "
    "deregistered by the source (`samza-source consumers` lists and deregisters them)",
    default_doc="required with `SubscribeToShard`", aliases=("kinesis.consumerName",))

# ---- tasks ---------------------------------------------------------------------------------------------------------
TASKS = Option(
    "tasks", Count(minimum=1),
    "Spark input partitions (Samza tasks); at most one per shard is useful",
    default_doc="open shards at the first job model")
ASSIGNMENT = Option(
    "assignment", OneOf((LINEAGE, BALANCED)),
    "`lineage`: a child shard joins its parent's task (keys keep their task); `balanced`: the least-loaded task",
    default=LINEAGE)

# ---- where a query starts, and how much a micro-batch reads ------------------------------------------------------
STARTING_POSITION = Option(
    "startingPosition", Text("`LATEST`, `TRIM_HORIZON`, `AT_TIMESTAMP:<ISO-8601>`, `kcl` or per-shard JSON"),
    "where a new checkpoint starts (`kcl`: after a KCL lease table's checkpoints); Startpoints re-position later. "
    "Per-shard JSON: every shard named must exist and its sequence numbers belong to it; shards not named start at "
    "`LATEST`, except descendants of a named shard, which start at `TRIM_HORIZON`",
    default=LATEST, default_doc="`LATEST` (batch: `TRIM_HORIZON`)", aliases=("kinesis.startingPosition",))
#: AWS's Kinesis connector's maxFetchRecordsPerShard default. Rows go to Spark after every GetRecords page, so a
#: task holds one page (<= 10,000 records), never a whole batch.
MAX_RECORDS_PER_SHARD = Option(
    "maxRecordsPerShard", Count(minimum=1),
    "records per shard per micro-batch",
    default=100_000, aliases=("kinesis.maxFetchRecordsPerShard",))
#: the AWS connector's ``kinesis.maxFetchTimePerShardSec`` counts seconds: ``kinesis/options.py`` converts it
AWS_MAX_FETCH_TIME_PER_SHARD_SEC_OPTION = "kinesis.maxFetchTimePerShardSec"
MAX_FETCH_TIME_PER_SHARD = Option(
    "maxFetchTimePerShard", Duration(minimum_ms=100),
    "how long one task reads one shard per micro-batch (the AWS connector's name counts whole seconds)",
    default=10_000, aliases=(AWS_MAX_FETCH_TIME_PER_SHARD_SEC_OPTION,))
DESCRIBE_SHARD_INTERVAL = Option(
    "describeShardInterval", Duration(),
    "the least time between two ListShards calls of the driver (`0`: every micro-batch lists)",
    default=0, aliases=("kinesis.describeShardInterval",))
KCL_LEASE_TABLE = Option(
    "kcl.leaseTable", Text("DynamoDB table"),
    "mirror committed checkpoints into a KCL-compatible DynamoDB lease table (`leaseKey`, `checkpoint`/"
    "`SHARD_END`, `checkpointSubSequenceNumber`, `leaseCounter`, `leaseOwner`, `parentShardId`)",
    default_doc="off")

# ---- batch reads (spark.read) --------------------------------------------------------------------------------------
ENDING_POSITION = Option(
    "endingPosition", Text("`LATEST`, `AT_TIMESTAMP:<ISO-8601>` or per-shard JSON"),
    "where a batch read ends (`LATEST`: fixed to the time the read is planned)",
    default=LATEST, bounded_only=True)

# ---- refused: what Spark's or the AWS connector's sources have and this one deliberately does not ------------------
_ONE_TASK = (f"a Spark input partition is one Samza task, which reads its shards in order, so a shard is never "
             f"split across Spark tasks; for more parallelism set '{TASKS.name}' (up to one task per shard), add "
             "shards, or repartition() the DataFrame after load(); remove the option")
_OWN_METADATA = (f"samza-kinesis keeps its batch ends, startpoints and checkpoint mirror in '{METADATA_STORE.name}' "
                 f"(e.g. dynamodb://table?region=...), and can mirror checkpoints to a KCL lease table with "
                 f"'{KCL_LEASE_TABLE.name}'; use those instead")
_RETRIES = (f"calls to AWS are retried with backoff for a time rather than a count; set '{RETRY_TIMEOUT.name}' "
            f"(default {format_duration(RETRY_TIMEOUT.default)}) instead")
_BOUND = f"bound a batch with '{MAX_RECORDS_PER_SHARD.name}' / '{MAX_FETCH_TIME_PER_SHARD.name}' instead"
_JAVA_CREDENTIALS = (f"Java credential providers do not exist in Python: use '{ACCESS_KEY_ID.name}'/"
                     f"'{SECRET_KEY.name}', '{ROLE_ARN.name}', or boto3's default chain")
_KAFKA_ONLY = (f"samza-kinesis maps shards to tasks itself, keeping a child shard in its parent's task; set "
               f"'{TASKS.name}' and '{ASSIGNMENT.name}' instead; remove the option")
AWS_RETRY_OPTIONS = tuple(f"kinesis.{kind}{what}" for kind in ("metadata", "client")
                          for what in ("NumRetries", "RetryIntervalsMs", "MaxRetryIntervalMs"))
AWS_INTERNAL_OPTIONS = tuple(f"kinesis.internal.{what}" for what in (
    "avoidEmptyBatches", "dataQueueCapacity", "maxDataQueueEmptyCount", "dataQueueWaitTimeoutSec",
    "maintenanceTaskIntervalSec"))
AWS_PROXY_OPTIONS = ("proxyAddress", "proxyPort", "proxyUsername", "proxyPassword")
#: the job-model options of the Kafka source (``common.GROUPING_OPTIONS``)
KAFKA_GROUPING_OPTIONS = ("grouper", "expansion.algorithm", "task.broadcast.inputs", "copartition")
REFUSED = {
    MIN_PARTITIONS_OPTION: _ONE_TASK,
    MAX_RECORDS_PER_PARTITION_OPTION: _ONE_TASK,
    "kinesis.subscribeToShard.timeoutSec": "a subscription is read for at most the batch's "
    f"'{MAX_FETCH_TIME_PER_SHARD.name}' and renewed within it when it ends; remove the option",
    "kinesis.subscribeToShard.maxRetries": _RETRIES,
    "kinesis.metadataCommitterType": _OWN_METADATA,
    "kinesis.metadataPath": _OWN_METADATA,
    "kinesis.dynamodb.tableName": _OWN_METADATA,
    "kinesis.minBatchesToRetain": "the source's metadata is cleaned up as batches commit (Spark's own "
    "spark.sql.streaming.minBatchesToRetain governs the checkpoint); remove the option",
    "kinesis.checkNewRecordThreads": "the driver does not probe shards for new records; each micro-batch reads "
    f"to what is there, bounded by '{MAX_RECORDS_PER_SHARD.name}' and '{MAX_FETCH_TIME_PER_SHARD.name}'; remove "
    "the option",
    "kinesis.credentialProviderClass": f"{_JAVA_CREDENTIALS} (environment, profile, instance or pod role)",
    "kinesis.credentialProviderParam": _JAVA_CREDENTIALS,
    "kinesis.getRecords.numberOfRecordsPerFetch": "GetRecords pages are fetched at their maximum size (10,000 "
    f"records) back to back; {_BOUND}",
    "kinesis.getRecords.fetchIntervalMs": "GetRecords pages are fetched back to back, backing off only when Kinesis "
    f"throttles; {_BOUND}",
    **{name: _RETRIES for name in AWS_RETRY_OPTIONS},
    **{name: "internal settings of the AWS connector's record queue, which samza-kinesis does not have; remove the "
       "option" for name in AWS_INTERNAL_OPTIONS},
    **{name: "boto3 uses the HTTPS_PROXY / HTTP_PROXY environment variables: set them for the driver and the "
       "executors (e.g. spark.executorEnv.HTTPS_PROXY) and remove the option" for name in AWS_PROXY_OPTIONS},
    **{name: _KAFKA_ONLY for name in KAFKA_GROUPING_OPTIONS},
}

KINESIS = OptionSpec(
    source=SOURCE,
    options=(
        STREAM_NAME, REGION, ENDPOINT_URL, DYNAMODB_ENDPOINT_URL, ACCESS_KEY_ID, SECRET_KEY, SESSION_TOKEN,
        ROLE_ARN, ROLE_SESSION_NAME, STS_ENDPOINT_URL, CONSUMER_TYPE, CONSUMER_NAME,
        *(FAIL_ON_DATA_LOSS.with_aliases("kinesis.failOnDataLoss") if o is FAIL_ON_DATA_LOSS else o
          for o in JOB_OPTIONS),
        TASKS, ASSIGNMENT, STARTING_POSITION, MAX_RECORDS_PER_SHARD, MAX_FETCH_TIME_PER_SHARD,
        DESCRIBE_SHARD_INTERVAL, KCL_LEASE_TABLE, ENDING_POSITION,
    ),
    namespaces=(TESTING,),
    refused=REFUSED,
)

# the names, for messages (f"option '{STARTING_POSITION.name}' ...")
AWS_STREAM_NAME_OPTION = STREAM_NAME.aliases[0]
BOUNDED_ONLY_OPTIONS = KINESIS.bounded_only()
#: the AWS connector's name -> ours; giving both (or two names of one option) is an error
AWS_CONNECTOR_ALIASES = KINESIS.aliases()
