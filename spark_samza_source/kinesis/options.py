"""Options of the ``samza-kinesis`` source, parsed: every entry is declared in ``options/kinesis.py`` (name, the AWS
connector's aliases, kind, default, description); this resolves the aliases, turns the values into the source's
types and checks what involves several options. Parsed once on the driver when the query starts.

Credentials are kept only to build clients; ``describe()`` and every error leave them out.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..core.errors import ConfigError
from ..metadata import redact_uri
from ..options import kinesis as spec
from ..options.common import JOB_NAME
from ..options.kinesis import (
    ACCESS_KEY_ID,
    AT_TIMESTAMP,
    AWS_MAX_FETCH_TIME_PER_SHARD_SEC_OPTION,
    AWS_STREAM_NAME_OPTION,
    BOUNDED_ONLY_OPTIONS,
    CONSUMER_NAME,
    CONSUMER_TYPE,
    ENDPOINT_URL,
    KCL,
    LATEST,
    MAX_FETCH_TIME_PER_SHARD,
    SECRET_KEY,
    STARTING_POSITION,
    STREAM_NAME,
    TRIM_HORIZON,
)
from ..options.option import OptionNames
from ..options.values import Options, json_object
from ..source.job_options import JobOptions
from .errors import PositionFormatError
from .positions import ShardPosition
from .starting import DEFAULT_STARTING_POSITION, AtTimestamp, KclCheckpoints, PerShard, StartingPosition, TrimHorizon
from .starting import Latest as LatestPosition

log = logging.getLogger(__name__)

SYSTEM = "kinesis"
#: the defaults the executors' reader uses when called without options (its tests, the benchmarks)
DEFAULT_MAX_RECORDS_PER_SHARD: int = spec.MAX_RECORDS_PER_SHARD.default
DEFAULT_MAX_FETCH_TIME_MS: int = spec.MAX_FETCH_TIME_PER_SHARD.default
#: the names samza-kinesis refuses, with the reason and what to do instead
REFUSED_OPTIONS = spec.REFUSED
#: the AWS connector's name -> ours; giving both (or two names of one option) is an error
AWS_CONNECTOR_ALIASES = spec.AWS_CONNECTOR_ALIASES

__all__ = ["BOUNDED_ONLY_OPTIONS", "KinesisSourceOptions", "at_timestamp_ms", "option_names", "resolve_aliases"]


def option_names() -> OptionNames:
    """The names samza-kinesis knows (the AWS connector's aliases included), its namespaces and its refused names,
    from its spec (read when asked, so an entry added to the spec is known without further change)."""
    return spec.KINESIS.names()


def resolve_aliases(raw: Any) -> dict[str, str]:
    """The options with each AWS connector name replaced by ours (``kinesis.streamName`` -> ``streamName``).

    An option given under two names (ours and the AWS connector's, or ``kinesis.region`` and
    ``kinesis.kinesisRegion``) is an error naming both: which one was meant cannot be told. The AWS connector's
    ``kinesis.maxFetchTimePerShardSec`` counts seconds."""
    given = {str(k).lower(): ("" if v is None else str(v)) for k, v in dict(raw).items()}
    out = dict(given)
    spelled = {}
    for alias, ours in spec.KINESIS.aliases().items():
        if alias.lower() not in out:
            continue
        value = out.pop(alias.lower())
        target = ours.lower()
        if target in out:
            other = spelled.get(target, ours)
            raise ConfigError(f"options '{alias}' and '{other}' both set '{ours}' (the AWS connector's name and "
                              "ours, or two of the AWS connector's names); give only one of them")
        if alias == AWS_MAX_FETCH_TIME_PER_SHARD_SEC_OPTION:
            if not value.strip().isdigit() or int(value) < 1:
                raise ConfigError(f"option '{alias}' must be a whole number of seconds (>= 1), got {value!r}; or "
                                  f"use '{MAX_FETCH_TIME_PER_SHARD.name}' with a duration such as '10s'")
            value = f"{int(value)}s"
        out[target] = value
        spelled[target] = alias
    return out


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
    sts_endpoint_url: str | None
    tasks: int | None
    assignment: str
    starting: StartingPosition  # where a query without a checkpoint starts (starting.py); Startpoints override it
    max_records_per_shard: int
    max_fetch_time_ms: int
    describe_shard_interval_ms: int
    kcl_lease_table: str | None
    consumer_name: str | None = None  # enhanced fan-out (consumerType=SubscribeToShard) through this consumer

    @property
    def fan_out(self) -> bool:
        return self.consumer_name is not None

    def __repr__(self) -> str:  # never show credentials, even in a debugger or a pickled-object dump
        return f"KinesisSourceOptions({self.describe()})"

    def describe(self) -> str:
        where = self.endpoint_url or self.region or "default region"
        return (f"samza-kinesis {JOB_NAME.name}={self.job_name} stream={self.stream} ({where}) "
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
            "sts_endpoint_url": self.sts_endpoint_url,
            "retry_timeout_s": self.retry_timeout_ms / 1000.0,
        }

    @classmethod
    def parse(cls, raw: Any) -> KinesisSourceOptions:
        spec.KINESIS.check_names(dict(raw))
        opts = Options(resolve_aliases(raw))
        stream = opts.string(STREAM_NAME.name, required=True, hint="the Kinesis data stream to read, e.g. "
                             f".option('{STREAM_NAME.name}', 'clicks') (or the AWS connector's "
                             f"'{AWS_STREAM_NAME_OPTION}')")
        if not _STREAM_RE.match(stream):
            raise ConfigError(f"option '{STREAM_NAME.name}' {stream!r} is not a valid Kinesis stream name "
                              "(1-128 characters from letters, digits, '_', '.', '-')")
        endpoint = spec.ENDPOINT_URL.read(opts)
        if endpoint is not None and not re.match(r"^https?://", endpoint):
            raise ConfigError(f"option '{ENDPOINT_URL.name}' must start with http:// or https://, got {endpoint!r}")
        access_key = spec.ACCESS_KEY_ID.read(opts)
        secret = spec.SECRET_KEY.read(opts)
        if (access_key is None) != (secret is None):
            raise ConfigError(f"options '{ACCESS_KEY_ID.name}' and '{SECRET_KEY.name}' go together: set both "
                              "or neither (neither uses boto3's default credential chain)")
        common = JobOptions.parse_common(opts, job_name_example="clicks-etl",
                                         store_holds="startpoints, batch ends and checkpoint mirror")
        return cls(
            **common,
            stream=stream,
            region=spec.REGION.read(opts),
            endpoint_url=endpoint,
            dynamodb_endpoint_url=opts.string(spec.DYNAMODB_ENDPOINT_URL.name, endpoint),
            access_key_id=access_key,
            secret_key=secret,
            session_token=spec.SESSION_TOKEN.read(opts),
            role_arn=spec.ROLE_ARN.read(opts),
            role_session_name=opts.string(spec.ROLE_SESSION_NAME.name, f"samza-{common['job_name']}")[:64],
            sts_endpoint_url=spec.STS_ENDPOINT_URL.read(opts),
            tasks=spec.TASKS.read(opts),
            assignment=spec.ASSIGNMENT.read(opts),
            starting=_parse_starting(spec.STARTING_POSITION.read(opts)),
            max_records_per_shard=spec.MAX_RECORDS_PER_SHARD.read(opts),
            max_fetch_time_ms=spec.MAX_FETCH_TIME_PER_SHARD.read(opts),
            kcl_lease_table=spec.KCL_LEASE_TABLE.read(opts),
            describe_shard_interval_ms=spec.DESCRIBE_SHARD_INTERVAL.read(opts),
            consumer_name=_parse_consumer(opts),
        )


_CONSUMER_RE = re.compile(r"^[a-zA-Z0-9_.-]{1,128}$")


def _parse_consumer(opts: Options) -> str | None:
    """The stream consumer to read through with enhanced fan-out; None for ``GetRecords`` polling."""
    name = spec.CONSUMER_NAME.read(opts)
    if spec.CONSUMER_TYPE.read(opts) != spec.SUBSCRIBE_TO_SHARD_CONSUMER:
        if name is not None:
            raise ConfigError(f"option '{CONSUMER_NAME.name}' is set but '{CONSUMER_TYPE.name}' is "
                              f"{spec.GET_RECORDS_CONSUMER!r} (polling, which uses no consumer): set "
                              f"'{CONSUMER_TYPE.name}' to '{spec.SUBSCRIBE_TO_SHARD_CONSUMER}' or remove it")
        return None
    if name is None:
        raise ConfigError(f"option '{CONSUMER_NAME.name}' is required with {CONSUMER_TYPE.name}="
                          f"{spec.SUBSCRIBE_TO_SHARD_CONSUMER}: the name of the stream consumer enhanced fan-out "
                          f"reads through (registered if absent), e.g. .option('{CONSUMER_NAME.name}', "
                          "'clicks-etl') (or the AWS connector's 'kinesis.consumerName')")
    if not _CONSUMER_RE.match(name):
        raise ConfigError(f"option '{CONSUMER_NAME.name}' {name!r} is not a valid stream consumer name (1-128 "
                          "characters from letters, digits, '_', '.', '-')")
    return name


def _parse_starting(value: str | None) -> StartingPosition:
    if value is None:
        return DEFAULT_STARTING_POSITION
    text = value.strip()
    upper = text.upper()
    if upper == LATEST:
        return LatestPosition()
    if upper in (TRIM_HORIZON, "EARLIEST"):
        return TrimHorizon()
    if upper == KCL:
        return KclCheckpoints()
    if upper.startswith(AT_TIMESTAMP):
        return AtTimestamp(at_timestamp_ms(STARTING_POSITION.name, value))
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
                f"option '{STARTING_POSITION.name}' per-shard JSON is invalid ({err}); expected e.g. "
                '{"shardId-000000000000": "TRIM_HORIZON", "shardId-000000000001": '
                '{"type": "AFTER_SEQUENCE_NUMBER", "sequence": "4960...", "sub": -1}}'
            ) from None
        return PerShard(per_shard)
    raise ConfigError(
        f"option '{STARTING_POSITION.name}' must be LATEST, TRIM_HORIZON, AT_TIMESTAMP:<ISO-8601>, kcl, or per-shard "
        f"JSON; got {value!r}"
    )


def at_timestamp_ms(option: str, value: str) -> int:
    """The epoch milliseconds of an ``AT_TIMESTAMP:<ISO-8601 with a zone>`` position given as option ``option``
    (``startingPosition``, ``endingPosition``); a ConfigError naming the option and an example otherwise."""
    stamp = value.strip()[len(AT_TIMESTAMP):].lstrip(":= ").strip()
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        if when.tzinfo is None:
            raise ValueError("no time zone")
    except ValueError:
        raise ConfigError(f"option '{option}' {value!r}: AT_TIMESTAMP needs an ISO-8601 time with a zone, e.g. "
                          "AT_TIMESTAMP:2026-11-22T08:00:00Z") from None
    return int(when.timestamp() * 1000)
