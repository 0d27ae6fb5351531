"""boto3 clients for Kinesis, DynamoDB (KCL lease table) and STS, built from the source's options.

``AwsClientSettings.from_settings(options.client_settings())`` takes the dict the options module produces (keys
``region``, ``endpoint_url``, ``dynamodb_endpoint_url``, ``access_key_id``, ``secret_key``, ``session_token``,
``role_arn``, ``role_session_name``; optional ``role_external_id``, ``sts_endpoint_url``, ``max_attempts``,
``connect_timeout_s``, ``read_timeout_s``, ``max_pool_connections``).  Credentials, in order of precedence:

1. ``access_key_id`` + ``secret_key`` (+ ``session_token``): static keys;
2. otherwise boto3's default chain (environment, shared config/profile, container or instance role);
3. with ``role_arn``: the credentials of 1. or 2. assume that role through STS; the temporary credentials are
   refreshed automatically before they expire (botocore ``RefreshableCredentials``), so long queries keep working.

Secrets never appear in text: ``repr`` and :meth:`AwsClientSettings.describe` omit them, and
:meth:`AwsClientSettings.scrub` removes them (and the access key id) from any message built from a botocore error.
The settings object is a small frozen dataclass, cheap to pickle to executors.

Retries: Kinesis clients make one attempt per call (botocore's own retries are off) with connect/read timeouts no
longer than ``retry_timeout_s`` (option ``endpoint.retryTimeout``, default 60 s): the admin and the reader retry an
endpoint that does not answer (refused, reset, timed out, HTTP 5xx) and throttling themselves, with backoff, for up
to that long, then fail naming the endpoint (``admin.RetryClock``). Stacking botocore's retries (5 attempts x 30 s
read timeout) under those loops made a hung endpoint take minutes to report. DynamoDB and STS clients keep
botocore's ``standard`` mode with ``max_attempts`` (default 5, the first attempt included: botocore's
``total_max_attempts``) and 10 s / 30 s timeouts, and nothing of ours retries on top of it. One retry policy per
call, either way; tests/integration/kinesis/test_kinesis_throttling.py counts the requests at the server.

Clients are cached per process and per settings (``kinesis_client``, ``dynamodb_client``): building a boto3 client
costs tens of milliseconds, and ``read()`` runs once per task and micro-batch.  boto3 clients are thread-safe;
sessions are not, so they are only created under a lock.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any

from ..core.errors import ConfigError
from ..options.common import DEFAULT_RETRY_TIMEOUT_MS
from . import errors

__all__ = [
    "AwsClientSettings",
    "kinesis_client",
    "dynamodb_client",
    "client_where",
    "clear_client_cache",
    "DEFAULT_MAX_ATTEMPTS",
]

DEFAULT_MAX_ATTEMPTS = 5
_ROLE_DURATION_S = 3600


@dataclass(frozen=True, repr=False)
class AwsClientSettings:
    region: str | None = None
    endpoint_url: str | None = None
    dynamodb_endpoint_url: str | None = None
    access_key_id: str | None = None
    secret_key: str | None = None
    session_token: str | None = None
    role_arn: str | None = None
    role_session_name: str = "samza-kinesis"
    role_external_id: str | None = None
    sts_endpoint_url: str | None = None
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 30.0
    max_pool_connections: int = 10
    retry_timeout_s: float = DEFAULT_RETRY_TIMEOUT_MS / 1000  # option endpoint.retryTimeout

    def __post_init__(self) -> None:
        if (self.access_key_id is None) != (self.secret_key is None):
            raise errors.credentials_half_given()
        if not isinstance(self.max_attempts, int) or not 1 <= self.max_attempts <= 20:
            raise errors.max_attempts_invalid(self.max_attempts)
        for name in ("connect_timeout_s", "read_timeout_s", "retry_timeout_s"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value <= 0:
                raise errors.client_timeout_invalid(name, value)

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any] | AwsClientSettings) -> AwsClientSettings:
        """Build from ``KinesisSourceOptions.client_settings()`` (None values mean "not set")."""
        if isinstance(settings, AwsClientSettings):
            return settings
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise errors.client_settings_unknown(unknown, sorted(known))
        return cls(**{k: v for k, v in settings.items() if v is not None})

    # ---- text without secrets -------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"AwsClientSettings({self.describe()})"

    def describe(self) -> str:
        """Region, endpoints and the kind of credentials: safe for logs and error messages."""
        creds = "static keys" if self.access_key_id else "default credential chain"
        if self.role_arn:
            creds += f" assuming role {self.role_arn}"
        parts = [f"region {self.region or 'from the environment'}"]
        if self.endpoint_url:
            parts.append(f"endpoint {self.endpoint_url}")
        if self.dynamodb_endpoint_url and self.dynamodb_endpoint_url != self.endpoint_url:
            parts.append(f"DynamoDB endpoint {self.dynamodb_endpoint_url}")
        parts.append(creds)
        return ", ".join(parts)

    def secrets(self) -> list[str]:
        return [s for s in (self.secret_key, self.session_token, self.access_key_id, self.role_external_id)
                if isinstance(s, str) and len(s) >= 4]

    def scrub(self, text: object, limit: int = 1000) -> str:
        """``text`` with every credential of these settings replaced by ``***`` (and cut to ``limit`` chars)."""
        out = str(text)
        for secret in sorted(self.secrets(), key=len, reverse=True):
            out = out.replace(secret, "***")
        return out if len(out) <= limit else out[:limit] + " ..."


# ---- clients ----------------------------------------------------------------------------------------------------
_LOCK = threading.Lock()
_SESSIONS: dict[AwsClientSettings, Any] = {}
_CLIENTS: dict[tuple[AwsClientSettings, str], Any] = {}


def _config(settings: AwsClientSettings, service: str = ""):
    from botocore.config import Config

    if service == "kinesis":  # one attempt per call: the admin and the reader retry, bounded by retry_timeout_s
        attempts = 1
        connect = min(settings.connect_timeout_s, settings.retry_timeout_s)
        read = min(settings.read_timeout_s, settings.retry_timeout_s)
    else:
        attempts, connect, read = settings.max_attempts, settings.connect_timeout_s, settings.read_timeout_s
    # total_max_attempts counts the first attempt; botocore's "max_attempts" key counts *retries* (1 meant two
    # requests per call: botocore retried Kinesis throttling underneath our own loops, seen from the server side)
    return Config(
        retries={"total_max_attempts": attempts, "mode": "standard"},
        connect_timeout=connect,
        read_timeout=read,
        max_pool_connections=settings.max_pool_connections,
        user_agent_extra="spark-samza-source",
    )


def _base_session(settings: AwsClientSettings):
    from ..metadata.aws_clients import boto3_session

    kwargs: dict[str, Any] = {}
    if settings.region:
        kwargs["region_name"] = settings.region
    if settings.access_key_id:
        kwargs.update(aws_access_key_id=settings.access_key_id, aws_secret_access_key=settings.secret_key,
                      aws_session_token=settings.session_token)
    return boto3_session(**kwargs)


def _assume_role_session(settings: AwsClientSettings):
    from botocore.credentials import RefreshableCredentials
    from botocore.session import get_session

    from ..metadata.aws_clients import boto3_session

    base = _base_session(settings)
    sts = base.client("sts", endpoint_url=settings.sts_endpoint_url, config=_config(settings))

    def refresh() -> dict[str, str]:
        request: dict[str, Any] = {"RoleArn": settings.role_arn, "RoleSessionName": settings.role_session_name[:64],
                                   "DurationSeconds": _ROLE_DURATION_S}
        if settings.role_external_id:
            request["ExternalId"] = settings.role_external_id
        try:
            creds = sts.assume_role(**request)["Credentials"]
        except Exception as err:
            raise errors.role_not_assumed(settings.role_arn, settings.describe(), settings.scrub(err)) from None
        return {"access_key": creds["AccessKeyId"], "secret_key": creds["SecretAccessKey"],
                "token": creds["SessionToken"], "expiry_time": creds["Expiration"].isoformat()}

    credentials = RefreshableCredentials.create_from_metadata(
        metadata=refresh(), refresh_using=refresh, method="sts-assume-role")
    botocore_session = get_session()
    botocore_session._credentials = credentials  # the documented way to plug refreshable credentials in
    return boto3_session(botocore_session, region_name=settings.region or base.region_name)


def _session(settings: AwsClientSettings):
    session = _SESSIONS.get(settings)
    if session is None:
        session = _assume_role_session(settings) if settings.role_arn else _base_session(settings)
        parsers = session._session.get_component("response_parser_factory")  # this session's own factory
        parsers.set_parser_defaults(timestamp_parser=_parse_timestamp)
        _SESSIONS[settings] = session
    return session


def _parse_timestamp(value: Any):
    """botocore's timestamp parser, without its cost for epoch numbers (every Kinesis record's arrival time).

    botocore turns each epoch number into a datetime in the *local* zone through dateutil's ``tzlocal()``: about
    half of the executor's CPU per record in ``GetRecords`` (measured with cProfile). The same instant as an
    aware UTC datetime is one C call. Strings (ISO 8601, e.g. STS expirations) keep botocore's parser.
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, UTC)
    from botocore.utils import parse_timestamp

    return parse_timestamp(value)


def _client(settings: Mapping[str, Any] | AwsClientSettings, service: str, endpoint: str | None):
    cfg = AwsClientSettings.from_settings(settings)
    key = (cfg, service)
    client = _CLIENTS.get(key)
    if client is not None:
        return client
    with _LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            try:
                client = _session(cfg).client(service, endpoint_url=endpoint, config=_config(cfg, service))
            except ConfigError:
                raise
            except Exception as err:
                raise errors.client_not_created(service, cfg.describe(), cfg.scrub(err)) from None
            _CLIENTS[key] = client
    return client


def kinesis_client(settings: Mapping[str, Any] | AwsClientSettings):
    """A (cached) boto3 Kinesis client for ``settings``."""
    cfg = AwsClientSettings.from_settings(settings)
    return _client(cfg, "kinesis", cfg.endpoint_url)


def dynamodb_client(settings: Mapping[str, Any] | AwsClientSettings):
    """A (cached) boto3 DynamoDB client for ``settings`` (``dynamodb_endpoint_url``, else ``endpoint_url``)."""
    cfg = AwsClientSettings.from_settings(settings)
    return _client(cfg, "dynamodb", cfg.dynamodb_endpoint_url or cfg.endpoint_url)


def clear_client_cache() -> None:
    """Forget cached clients and sessions (tests; after credentials were rotated)."""
    with _LOCK:
        _CLIENTS.clear()
        _SESSIONS.clear()


def client_where(client: Any) -> str:
    """``region R, endpoint URL`` of a boto3 client: where a stream was looked for, for error messages."""
    from ..metadata import redact_uri

    try:
        return f"region {client.meta.region_name}, endpoint {redact_uri(client.meta.endpoint_url)}"
    except AttributeError:
        return "an unknown endpoint"
