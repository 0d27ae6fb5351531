"""Options of the ``samza-kinesis`` source. Parsed once on the driver when the query starts.

Names follow the AWS connector where the meaning is the same (``streamName``, ``region``, ``endpointUrl``,
``startingPosition``, ``awsAccessKeyId``/``awsSecretKey``, ``roleArn``, ``failOnDataLoss``). Credentials are
kept only to build clients; ``describe()`` and every error leave them out.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..core.errors import ConfigError
from ..source.job_options import JobOptions
from ..source.option_parser import Options, json_object
from ..source.options import JOB_NAME_OPTION
from .positions import PositionFormatError, ShardPosition

if TYPE_CHECKING:
    from .starting import StartingPosition

# Per shard per batch, as AWS's Kinesis connector (maxFetchRecordsPerShard 100000). Rows go to Spark after every
# GetRecords page, so a task holds one page (<= 10,000 records), never a whole batch.
DEFAULT_MAX_RECORDS_PER_SHARD = 100_000
#: How long one task reads one shard per batch (option maxFetchTimePerShard); the reader's default too.
DEFAULT_MAX_FETCH_TIME_MS = 10_000

log = logging.getLogger(__name__)

SYSTEM = "kinesis"

# Option names only samza-kinesis has (the shared ones: source/options.py), the AWS connector's where they match.
STREAM_NAME_OPTION = "streamName"
REGION_OPTION = "region"
ENDPOINT_URL_OPTION = "endpointUrl"
DYNAMODB_ENDPOINT_URL_OPTION = "dynamodbEndpointUrl"
ACCESS_KEY_ID_OPTION = "awsAccessKeyId"
SECRET_KEY_OPTION = "awsSecretKey"
SESSION_TOKEN_OPTION = "sessionToken"
ROLE_ARN_OPTION = "roleArn"
ROLE_SESSION_NAME_OPTION = "roleSessionName"
TASKS_OPTION = "tasks"
ASSIGNMENT_OPTION = "assignment"
STARTING_POSITION_OPTION = "startingPosition"
MAX_RECORDS_PER_SHARD_OPTION = "maxRecordsPerShard"
MAX_FETCH_TIME_PER_SHARD_OPTION = "maxFetchTimePerShard"
KCL_LEASE_TABLE_OPTION = "kcl.leaseTable"
#: batch-only (``spark.read``): where a batch read stops. A streaming read refuses it.
ENDING_POSITION_OPTION = "endingPosition"
BATCH_ONLY_OPTIONS = (ENDING_POSITION_OPTION,)
#: ``startingPosition`` words (upper-cased; ``EARLIEST`` means ``TRIM_HORIZON``; anything else is per-shard JSON)
LATEST, TRIM_HORIZON, AT_TIMESTAMP, KCL = "LATEST", "TRIM_HORIZON", "AT_TIMESTAMP", "KCL"
_STREAM_RE = re.compile(r"^[a-zA-Z0-9_.-]{1,128}$")


@dataclass(frozen=True, repr=False)
class KinesisSourceOptions(JobOptions):
    stream: str
    region: str | None
    endpoint_url: str | None
    dynamodb_endpoint_url: str | None
    access_key_id: str | None
    secret_key: str | None
    session_token: str | None
    role_arn: str | None
    role_session_name: str
    tasks: int | None
    assignment: str
    starting: StartingPosition  # where a query without a checkpoint starts (starting.py); Startpoints override it
    max_records_per_shard: int
    max_fetch_time_ms: int
    kcl_lease_table: str | None

    def __repr__(self) -> str:  # never show credentials, even in a debugger or a pickled-object dump
        return f"KinesisSourceOptions({self.describe()})"

    def describe(self) -> str:
        from ..metadata import redact_uri

        where = self.endpoint_url or self.region or "default region"
        return (f"samza-kinesis {JOB_NAME_OPTION}={self.job_name} stream={self.stream} ({where}) "
                f"tasks={self.tasks or 'auto'} assignment={self.assignment} store={redact_uri(self.metadata_store)}")

    def client_settings(self) -> dict[str, Any]:
        """Everything needed to build boto3 clients (on the driver and on executors)."""
        return {
            "region": self.region,
            "endpoint_url": self.endpoint_url,
            "dynamodb_endpoint_url": self.dynamodb_endpoint_url,
            "access_key_id": self.access_key_id,
            "secret_key": self.secret_key,
            "session_token": self.session_token,
            "role_arn": self.role_arn,
            "role_session_name": self.role_session_name,
            "retry_timeout_s": self.retry_timeout_ms / 1000.0,
        }

    @classmethod
    def parse(cls, raw: Any) -> KinesisSourceOptions:
        opts = Options(raw)
        stream = opts.string(STREAM_NAME_OPTION, required=True, hint="the Kinesis data stream to read, e.g. "
                             ".option('streamName', 'clicks')")
        if not _STREAM_RE.match(stream):
            raise ConfigError(f"option 'streamName' {stream!r} is not a valid Kinesis stream name "
                              "(1-128 characters from letters, digits, '_', '.', '-')")
        endpoint = opts.string(ENDPOINT_URL_OPTION)
        if endpoint is not None and not re.match(r"^https?://", endpoint):
            raise ConfigError(f"option 'endpointUrl' must start with http:// or https://, got {endpoint!r}")
        access_key = opts.string(ACCESS_KEY_ID_OPTION)
        secret = opts.string(SECRET_KEY_OPTION)
        if (access_key is None) != (secret is None):
            raise ConfigError("options 'awsAccessKeyId' and 'awsSecretKey' go together: set both or neither "
                              "(neither uses boto3's default credential chain)")
        common = JobOptions.parse_common(opts, job_name_example="clicks-etl",
                                         store_holds="startpoints, batch ends and checkpoint mirror")
        return cls(
            **common,
            stream=stream,
            region=opts.string(REGION_OPTION),
            endpoint_url=endpoint,
            dynamodb_endpoint_url=opts.string(DYNAMODB_ENDPOINT_URL_OPTION, endpoint),
            access_key_id=access_key,
            secret_key=secret,
            session_token=opts.string(SESSION_TOKEN_OPTION),
            role_arn=opts.string(ROLE_ARN_OPTION),
            role_session_name=opts.string(ROLE_SESSION_NAME_OPTION, f"samza-{common['job_name']}")[:64],
            tasks=opts.integer(TASKS_OPTION, None, minimum=1),
            assignment=opts.choice(ASSIGNMENT_OPTION, "lineage", ("lineage", "balanced")),
            starting=_parse_starting(opts.string(STARTING_POSITION_OPTION)),
            max_records_per_shard=opts.integer(MAX_RECORDS_PER_SHARD_OPTION, DEFAULT_MAX_RECORDS_PER_SHARD, minimum=1),
            max_fetch_time_ms=opts.duration_ms(MAX_FETCH_TIME_PER_SHARD_OPTION, DEFAULT_MAX_FETCH_TIME_MS,
                                               minimum_ms=100),
            kcl_lease_table=opts.string(KCL_LEASE_TABLE_OPTION),
        )


def _parse_starting(value: str | None) -> StartingPosition:
    # starting.py names this option in its messages: imported here, so neither module imports the other on load
    from .starting import DEFAULT_STARTING_POSITION, AtTimestamp, KclCheckpoints, Latest, PerShard, TrimHorizon

    if value is None:
        return DEFAULT_STARTING_POSITION
    text = value.strip()
    upper = text.upper()
    if upper == LATEST:
        return Latest()
    if upper in (TRIM_HORIZON, "EARLIEST"):
        return TrimHorizon()
    if upper == KCL:
        return KclCheckpoints()
    if upper.startswith(AT_TIMESTAMP):
        stamp = text[len(AT_TIMESTAMP):].lstrip(":= ").strip()
        try:
            when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
            if when.tzinfo is None:
                raise ValueError("no time zone")
        except ValueError:
            raise ConfigError(
                f"option 'startingPosition' {value!r}: AT_TIMESTAMP needs an ISO-8601 time with a zone, e.g. "
                "AT_TIMESTAMP:2026-11-22T08:00:00Z"
            ) from None
        return AtTimestamp(int(when.timestamp() * 1000))
    if text.startswith("{"):
        try:
            parsed = json_object(text)
            per_shard = {}
            for shard, pos in parsed.items():
                if isinstance(pos, str):
                    pos = {"type": pos.upper()}
                per_shard[str(shard)] = ShardPosition.from_json(pos)
        except (ValueError, PositionFormatError, RecursionError) as err:
            raise ConfigError(
                f"option 'startingPosition' per-shard JSON is invalid ({err}); expected e.g. "
                '{"shardId-000000000000": "TRIM_HORIZON", "shardId-000000000001": '
                '{"type": "AFTER_SEQUENCE_NUMBER", "sequence": "4960...", "sub": -1}}'
            ) from None
        return PerShard(per_shard)
    raise ConfigError(
        f"option 'startingPosition' must be LATEST, TRIM_HORIZON, AT_TIMESTAMP:<ISO-8601>, kcl, or per-shard JSON; "
        f"got {value!r}"
    )
