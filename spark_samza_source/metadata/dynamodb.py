"""``dynamodb://TABLE`` metadata store: one item per key, with DynamoDB's conditional writes.

Why DynamoDB: Kinesis users already run the KCL lease table there, it is shared by every driver of a job, and
its conditional writes make ``put_if_absent``/``delete_if_equal`` atomic across machines (unlike object stores).

Item layout (table key: ``pk`` string HASH + ``sk`` string RANGE)::

    pk = "<job>/<namespace>"    sk = <key>    key = <key>    value = <JSON text>    format = 1

A key whose UTF-8 form exceeds DynamoDB's 1024-byte sort-key limit, the empty key, and any key starting with
``#`` get ``sk = "#sha256:<hex>"`` instead (so hashed and plain sort keys cannot collide); the original key is
always in the ``key`` attribute. Values are limited by DynamoDB's 400 KB item size.

URI: ``dynamodb://TABLE?region=R&endpoint=URL`` (``endpointUrl``/``endpoint_url`` are accepted too), plus
optional ``profile``, ``aws_access_key_id``/``aws_secret_access_key``/``aws_session_token`` (prefer boto3's
default chain: environment, profile, instance role), ``create_table=false`` and ``max_attempts=N`` (attempts
per call, the first included, under botocore's standard retries: the one retry policy of DynamoDB calls;
default 8). The table is created on first use when missing (PAY_PER_REQUEST), unless ``create_table=false``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable
from typing import Any

from ..core import errors
from ..core.errors import ConfigError, MetadataStoreError
from ..core.store import (
    DAMAGE_ERRORS,
    DamagedRecord,
    JsonValue,
    MetadataStore,
    StoreScan,
    is_damage,
    validate_job_name,
    validate_namespace,
)
from .aws_clients import boto3_session, shared_client
from .uri import OPTION, redact_uri, scrub_secrets

__all__ = ["DynamoDBMetadataStore", "sort_key", "FORMAT_VERSION", "MAX_SORT_KEY_BYTES"]

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
MAX_SORT_KEY_BYTES = 1024
HASH_PREFIX = "#"
_TABLE_RE = re.compile(r"^[A-Za-z0-9_.-]{3,255}$")
_PARAMS = {
    "region": "region", "region_name": "region",
    "endpoint": "endpoint", "endpointurl": "endpoint", "endpoint_url": "endpoint",
    "profile": "profile", "profile_name": "profile",
    "aws_access_key_id": "access_key", "access_key": "access_key",
    "aws_secret_access_key": "secret_key", "secret_key": "secret_key",
    "aws_session_token": "session_token", "session_token": "session_token",
    "create_table": "create_table",
    "max_attempts": "max_attempts",
}
_KEY_SCHEMA = [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}]
_VERIFIED: set[tuple[str, str, str]] = set()  # (endpoint, region, table) known to exist with our key schema
_VERIFIED_LOCK = threading.Lock()
_MAX_CAS_ATTEMPTS = 50
#: DynamoDB's limit of writes in one BatchWriteItem request
_BATCH_WRITE_MAX = 25
#: requests of one batch's unprocessed items before giving up (their pauses add up to about 6 s)
_BATCH_WRITE_ATTEMPTS = 8


def sort_key(key: str) -> str:
    """The ``sk`` attribute for ``key``: the key itself, or ``#sha256:<hex>`` when it cannot be used as is."""
    try:
        raw = key.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise errors.metadata_value_not_storable(
            f"metadata key {key!r:.200} is not valid Unicode text ({exc.reason}); keys must encode as UTF-8"
        ) from None
    if not raw or len(raw) > MAX_SORT_KEY_BYTES or key.startswith(HASH_PREFIX):
        return f"{HASH_PREFIX}sha256:{hashlib.sha256(raw).hexdigest()}"
    return key


def _parse_uri(uri: str) -> dict[str, Any]:
    def bad(problem: str) -> ConfigError:
        return errors.invalid_option(
            f"{OPTION} {redact_uri(uri)!r}: {problem}. Expected dynamodb://TABLE?region=REGION&endpoint=URL "
            f"(optional: profile, aws_access_key_id, aws_secret_access_key, aws_session_token, create_table, "
            "max_attempts)"
        )

    try:
        parts = urllib.parse.urlsplit(uri)
    except ValueError as exc:
        raise bad(f"not a valid URI ({scrub_secrets(str(exc), uri)})") from None
    if "@" in parts.netloc:
        raise bad("credentials do not go before the table name; use the aws_access_key_id and "
                  "aws_secret_access_key parameters, or better boto3's default chain (environment, profile, role)")
    table = urllib.parse.unquote(parts.netloc)
    if not _TABLE_RE.match(table):
        raise bad(f"table name {table!r:.80} is not a DynamoDB table name (3-255 of A-Z a-z 0-9 _ . -)")
    if parts.path not in ("", "/") or parts.fragment:
        raise bad("nothing may follow the table name except ?parameters")
    cfg: dict[str, Any] = {"table": table, "create_table": True}
    for name, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True):
        canonical = _PARAMS.get(name.lower())
        if canonical is None:
            raise bad(f"unknown parameter {name!r:.40}; accepted: {', '.join(sorted(set(_PARAMS)))}")
        if canonical == "create_table":
            if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise bad(f"create_table must be true or false, not {value!r:.20}")
            cfg[canonical] = value.lower() in ("true", "1", "yes")
        elif canonical == "max_attempts":
            if not value.isdigit() or not 1 <= int(value) <= 20:
                raise bad(f"max_attempts must be an integer from 1 to 20, not {value!r:.20}")
            cfg[canonical] = int(value)
        elif value:
            cfg[canonical] = value
    endpoint = cfg.get("endpoint")
    if endpoint is not None and not re.match(r"^https?://[^/?#]+", endpoint):
        raise bad(f"endpoint {redact_uri(endpoint)!r:.100} must be an http:// or https:// URL")
    if ("access_key" in cfg) != ("secret_key" in cfg):
        raise bad("give both aws_access_key_id and aws_secret_access_key, or neither (boto3's default chain)")
    return cfg


class DynamoDBMetadataStore(MetadataStore):
    """A MetadataStore in one DynamoDB table (shared by many jobs: the partition key starts with the job)."""

    #: put_if_absent/delete_if_equal use DynamoDB conditional writes: atomic across processes and machines
    atomic_conditionals = True

    def __init__(
        self,
        table: str,
        job_name: str,
        *,
        region: str | None = None,
        endpoint: str | None = None,
        profile: str | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        session_token: str | None = None,
        create_table: bool = True,
        max_attempts: int = 8,
        uri: str | None = None,
    ) -> None:
        """Eleven parameters, keyword-only past the second: one per part of the ``dynamodb://`` URI the store is
        opened from, kept as they are in ``_init_args`` so a pickled store re-creates its client on an executor."""
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError

        self.job_name = validate_job_name(job_name)
        self._init_args = dict(
            table=table, job_name=job_name, region=region, endpoint=endpoint, profile=profile,
            access_key=access_key, secret_key=secret_key, session_token=session_token,
            create_table=create_table, max_attempts=max_attempts, uri=uri,
        )
        self.table = table
        self.create_table = create_table
        self._raw_uri = uri or ""
        if uri:
            self.uri = redact_uri(uri)
        else:
            query = urllib.parse.urlencode({k: v for k, v in (("region", region), ("endpoint", endpoint)) if v})
            self.uri = redact_uri(f"dynamodb://{table}" + (f"?{query}" if query else ""))

        def make_client():
            session = boto3_session(
                aws_access_key_id=access_key, aws_secret_access_key=secret_key, aws_session_token=session_token,
                region_name=region, profile_name=profile,
            )
            return session.client(
                "dynamodb", endpoint_url=endpoint,
                config=Config(retries={"mode": "standard", "total_max_attempts": max_attempts}, connect_timeout=10,
                              read_timeout=30),
            )

        try:
            self._client = shared_client(("dynamodb", access_key, secret_key, session_token, region, profile, endpoint,
                                          max_attempts), make_client)
        except BotoCoreError as exc:  # NoRegionError, ProfileNotFound ...
            hint = " (add ?region=REGION to the URI or set AWS_REGION)" if "region" in str(exc).lower() else ""
            raise errors.invalid_option(
                f"{OPTION} {self.uri!r}: cannot create a DynamoDB client: {scrub_secrets(str(exc), self._raw_uri)}"
                f"{hint}"
            ) from None
        self.region = self._client.meta.region_name
        self._cache_key = (self._client.meta.endpoint_url, self.region, table)
        self._ready = False
        self._ready_lock = threading.Lock()
        #: Query page size (None: DynamoDB's 1 MB pages); tests lower it to exercise pagination
        self.query_limit: int | None = None

    @classmethod
    def from_uri(cls, uri: str, job_name: str) -> DynamoDBMetadataStore:
        validate_job_name(job_name)
        cfg = _parse_uri(uri)
        return cls(cfg.pop("table"), job_name, uri=uri, **cfg)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as constructor arguments (boto3 clients do not pickle), e.g. to ship a store to executors."""
        return (_restore, (self._init_args,))

    def close(self) -> None:
        """Nothing to release: the client is the process's (``aws_clients``), shared by the stores opened with the
        same settings, and closing it would close theirs."""

    # -- helpers ------------------------------------------------------------------------------------------
    def _where(self, namespace: str, key: str | None) -> str:
        k = f"key {key!r:.200} in " if key is not None else ""
        return f"{k}namespace {namespace!r} of job {self.job_name!r} in DynamoDB table {self.table!r} ({self.uri})"

    def _fail(self, op: str, namespace: str, key: str | None, exc: BaseException) -> MetadataStoreError:
        from botocore.exceptions import ClientError, NoCredentialsError

        detail = scrub_secrets(str(exc), self._raw_uri)
        hint = ""
        if isinstance(exc, NoCredentialsError):
            hint = (" Configure AWS credentials (environment, profile, instance role) or add "
                    "aws_access_key_id/aws_secret_access_key to " + OPTION + ".")
        elif isinstance(exc, ClientError):
            code = exc.response.get("Error", {}).get("Code", "")
            if code == "ValidationException" and "size" in detail.lower():
                hint = " DynamoDB items are limited to 400 KB: store a smaller value."
            elif code in ("AccessDeniedException", "UnrecognizedClientException"):
                hint = f" Check the credentials and their IAM permissions on table {self.table!r}."
        else:
            hint = f" Check the endpoint and region ({self._client.meta.endpoint_url})."
        return errors.metadata_store_failed(f"{op} failed for {self._where(namespace, key)}: {detail}.{hint}")

    def _call(self, op: str, namespace: str, key: str | None, fn: Callable[..., Any], **kwargs: Any) -> Any:
        """Run a client call; ConditionalCheckFailedException propagates, every other failure is wrapped."""
        from botocore.exceptions import BotoCoreError, ClientError

        self._ensure_table(namespace, key)
        for attempt in (1, 2):
            try:
                return fn(**kwargs)
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code", "")
                if code == "ConditionalCheckFailedException":
                    raise
                if code == "ResourceNotFoundException" and attempt == 1 and self.create_table:
                    self._forget_table()  # deleted behind our back: create it again and retry once
                    self._ensure_table(namespace, key)
                    continue
                raise self._fail(op, namespace, key, exc) from None
            except BotoCoreError as exc:
                raise self._fail(op, namespace, key, exc) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _forget_table(self) -> None:
        with _VERIFIED_LOCK:
            _VERIFIED.discard(self._cache_key)
        self._ready = False

    def _ensure_table(self, namespace: str, key: str | None) -> None:
        """Check once per process that the table exists with our key schema; create it if allowed."""
        if self._ready:
            return
        from botocore.exceptions import BotoCoreError, ClientError

        with self._ready_lock:
            with _VERIFIED_LOCK:
                if self._cache_key in _VERIFIED:
                    self._ready = True
                    return
            try:
                try:
                    table = self._client.describe_table(TableName=self.table)["Table"]
                except ClientError as exc:
                    if exc.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
                        raise
                    table = self._create_table(namespace, key)
                if table.get("TableStatus") != "ACTIVE":
                    self._client.get_waiter("table_exists").wait(
                        TableName=self.table, WaiterConfig={"Delay": 1, "MaxAttempts": 300})
            except (ClientError, BotoCoreError) as exc:
                raise self._fail("opening the table", namespace, key, exc) from None
            schema = sorted(table.get("KeySchema", []), key=lambda e: e["KeyType"])
            if schema != _KEY_SCHEMA:
                raise errors.metadata_store_failed(
                    f"DynamoDB table {self.table!r} ({self.uri}) has key schema {schema}, but the metadata store "
                    "needs pk (string, HASH) and sk (string, RANGE): name another table in " + OPTION
                )
            with _VERIFIED_LOCK:
                _VERIFIED.add(self._cache_key)
            self._ready = True

    def _create_table(self, namespace: str, key: str | None) -> dict[str, Any]:
        from botocore.exceptions import ClientError

        if not self.create_table:
            raise errors.metadata_store_failed(
                f"DynamoDB table {self.table!r} does not exist ({self.uri}) and create_table=false: create it "
                "with partition key pk (S) and sort key sk (S), or drop create_table=false from " + OPTION
            )
        log.info("creating DynamoDB table %s (PAY_PER_REQUEST) for metadata store %s", self.table, self.uri)
        try:
            return self._client.create_table(
                TableName=self.table,
                KeySchema=_KEY_SCHEMA,
                AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                      {"AttributeName": "sk", "AttributeType": "S"}],
                BillingMode="PAY_PER_REQUEST",
            )["TableDescription"]
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code == "ResourceInUseException":  # another process is creating it right now
                return self._client.describe_table(TableName=self.table)["Table"]
            if code in ("AccessDeniedException", "UnrecognizedClientException"):
                raise errors.metadata_store_failed(
                    f"DynamoDB table {self.table!r} does not exist ({self.uri}) and these credentials may not "
                    f"create it ({code}): create it with partition key pk (S) and sort key sk (S), or grant "
                    "dynamodb:CreateTable and dynamodb:DescribeTable"
                ) from None
            raise

    def _pk(self, namespace: str) -> dict[str, str]:
        return {"S": f"{self.job_name}/{validate_namespace(namespace)}"}

    def _item_key(self, namespace: str, key: str) -> dict[str, dict[str, str]]:
        return {"pk": self._pk(namespace), "sk": {"S": sort_key(key)}}

    def _dump(self, namespace: str, key: str, value: JsonValue) -> str:
        try:
            return json.dumps(value, sort_keys=True, allow_nan=False, separators=(",", ":"))
        except (TypeError, ValueError) as exc:
            raise errors.metadata_value_not_storable(
                f"cannot store {self._where(namespace, key)}: the value is not JSON ({exc}); store dicts with "
                "string keys, lists, strings, finite numbers, booleans or None"
            ) from None

    def _load(self, namespace: str, key: str | None, item: dict[str, Any]) -> tuple[str, str, JsonValue]:
        """(key, raw JSON text, value) of an item; MetadataStoreError when it is not one of ours."""
        stored_key = item.get("key", {}).get("S")
        raw = item.get("value", {}).get("S")
        fmt_text = item.get("format", {}).get("N", "1")
        where = self._where(namespace, key if key is not None else stored_key)
        if stored_key is None or raw is None or not fmt_text.isdigit():
            raise errors.metadata_value_invalid(
                f"corrupt item for {where}: expected string attributes key and value and a number format. "
                "Delete the item (sk " + repr(item.get("sk", {}).get("S", "?"))[:200] + ")"
            )
        if int(fmt_text) > FORMAT_VERSION:
            raise errors.format_version_unknown(
                f"{where} was written in format {fmt_text} by a newer spark-samza-source (this one reads format "
                f"{FORMAT_VERSION}); upgrade spark-samza-source"
            )
        if key is not None and stored_key != key:
            raise errors.metadata_value_invalid(
                f"corrupt item for {where}: it holds key {stored_key!r:.200}. Delete it")
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise errors.metadata_value_invalid(
                f"corrupt value for {where}: attribute value is not valid JSON ({exc}). Delete or rewrite it"
            ) from None
        return stored_key, raw, value

    def _get_item(self, op: str, namespace: str, key: str) -> dict[str, Any] | None:
        resp = self._call(op, namespace, key, self._client.get_item, TableName=self.table,
                          Key=self._item_key(namespace, key), ConsistentRead=True)
        return resp.get("Item")

    def _put_item(self, op: str, namespace: str, key: str, value: JsonValue, **extra: Any) -> None:
        item = {**self._item_key(namespace, key), "key": {"S": key},
                "value": {"S": self._dump(namespace, key, value)}, "format": {"N": str(FORMAT_VERSION)}}
        self._call(op, namespace, key, self._client.put_item, TableName=self.table, Item=item, **extra)

    @staticmethod
    def _conditional_failed(exc: BaseException) -> bool:
        from botocore.exceptions import ClientError

        return isinstance(exc, ClientError) and \
            exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"

    # -- MetadataStore ------------------------------------------------------------------------------------
    def get(self, namespace: str, key: str) -> JsonValue | None:
        key = str(key)
        item = self._get_item("get", namespace, key)
        return None if item is None else self._load(namespace, key, item)[2]

    def put(self, namespace: str, key: str, value: JsonValue) -> None:
        self._put_item("put", namespace, str(key), value)

    def put_if_absent(self, namespace: str, key: str, value: JsonValue) -> bool:
        try:
            self._put_item("put_if_absent", namespace, str(key), value,
                           ConditionExpression="attribute_not_exists(sk)")
        except Exception as exc:
            if self._conditional_failed(exc):
                return False
            raise
        return True

    def delete(self, namespace: str, key: str) -> None:
        self._call("delete", namespace, str(key), self._client.delete_item, TableName=self.table,
                   Key=self._item_key(namespace, str(key)))

    def delete_many(self, namespace: str, keys: Iterable[str]) -> None:
        """``BatchWriteItem`` of up to 25 deletes a request (DynamoDB's limit), each request's unprocessed items
        sent again (throttling) with a growing pause: a clean-up of a thousand records is 40 requests, not a
        thousand. Keys are deduplicated (DynamoDB refuses a batch that names an item twice)."""
        requests = [{"DeleteRequest": {"Key": self._item_key(namespace, key)}} for key in dict.fromkeys(map(str, keys))]
        for first in range(0, len(requests), _BATCH_WRITE_MAX):
            pending = requests[first:first + _BATCH_WRITE_MAX]
            for attempt in range(_BATCH_WRITE_ATTEMPTS):
                resp = self._call("delete_many", namespace, None, self._client.batch_write_item,
                                  RequestItems={self.table: pending})
                pending = (resp.get("UnprocessedItems") or {}).get(self.table) or []
                if not pending:
                    break
                time.sleep(min(0.05 * 2 ** attempt, 2.0))
            else:
                raise errors.metadata_store_failed(
                    f"delete_many failed for {self._where(namespace, None)}: DynamoDB left {len(pending)} deletes "
                    f"unprocessed after {_BATCH_WRITE_ATTEMPTS} attempts (throttled). Raise the table's write "
                    "capacity, or run the clean-up again."
                )

    def delete_if_equal(self, namespace: str, key: str, expected: JsonValue) -> bool:
        """Compare decoded JSON (like every store), then delete only if the stored text is still unchanged."""
        key = str(key)

        def delete(raw: str) -> None:
            self._call("delete_if_equal", namespace, key, self._client.delete_item, TableName=self.table,
                       Key=self._item_key(namespace, key), **_unchanged(raw))

        return self._if_equal("delete_if_equal", namespace, key, expected, delete)

    def replace_if_equal(self, namespace: str, key: str, expected: JsonValue, value: JsonValue) -> bool:
        """Compare decoded JSON, then put only if the stored text is still the one compared. A put whose reply was
        lost and that botocore sent again meets its own value: that reads back as ours, so it counts as stored."""
        key = str(key)
        new = self._dump(namespace, key, value)

        def replace(raw: str) -> None:
            self._put_item("replace_if_equal", namespace, key, value, **_unchanged(raw))

        return self._if_equal("replace_if_equal", namespace, key, expected, replace,
                              ours=lambda item: item is not None and item.get("value", {}).get("S") == new)

    def _if_equal(self, op: str, namespace: str, key: str, expected: JsonValue, write: Callable[[str], None], *,
                  ours: Callable[[dict[str, Any] | None], bool] | None = None) -> bool:
        """Read, compare with ``expected`` (decoded JSON), then ``write(raw)``, conditioned on the stored text still
        being ``raw``; when that condition fails, read again (bounded). ``ours``: whether the item found after a
        failed condition is this call's own write (a retried request whose first reply was lost)."""
        for _ in range(_MAX_CAS_ATTEMPTS):
            item = self._get_item(op, namespace, key)
            if item is None:
                return False
            _, raw, current = self._load(namespace, key, item)
            if current != expected:
                return False
            try:
                write(raw)
                return True
            except Exception as exc:
                if not self._conditional_failed(exc):
                    raise
            if ours is not None and ours(self._get_item(op, namespace, key)):
                return True
            # changed between our read and the write: look again
        raise errors.metadata_write_contended(
            f"{op} gave up on {self._where(namespace, key)} after {_MAX_CAS_ATTEMPTS} attempts: the value keeps "
            "changing under concurrent writers"
        )

    def list(self, namespace: str) -> dict[str, JsonValue]:
        return self.scan(namespace).values_or_raise()

    def scan(self, namespace: str) -> StoreScan:
        found = StoreScan()
        kwargs: dict[str, Any] = {
            "TableName": self.table, "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": self._pk(namespace)}, "ConsistentRead": True,
        }
        if self.query_limit:
            kwargs["Limit"] = self.query_limit
        while True:
            resp = self._call("list", namespace, None, self._client.query, **kwargs)
            for item in resp.get("Items", []):
                try:
                    stored_key, value = self._read_listed(namespace, item)
                except DAMAGE_ERRORS as exc:
                    if not is_damage(exc):
                        raise
                    sk = str(item.get("sk", {}).get("S", "?"))
                    location = f"item pk={self._pk(namespace)['S']!r} sk={sk!r:.200} of table {self.table!r}"
                    found.damaged.append(
                        DamagedRecord(namespace, None if sk.startswith(HASH_PREFIX) else sk, location, exc))
                    continue
                found.values[stored_key] = value
            last = resp.get("LastEvaluatedKey")
            if not last:
                break
            kwargs["ExclusiveStartKey"] = last
        found.values = dict(sorted(found.values.items()))
        return found

    def _read_listed(self, namespace: str, item: dict[str, Any]) -> tuple[str, JsonValue]:
        """(key, value) of a listed item; the store's error for an item that is not the record its sort key says."""
        stored_key, _, value = self._load(namespace, None, item)
        if sort_key(stored_key) != item["sk"]["S"]:
            raise errors.metadata_value_invalid(
                f"corrupt item for {self._where(namespace, stored_key)}: its sort key "
                f"{item['sk']['S']!r:.200} does not belong to that key. Delete the item"
            )
        return stored_key, value


def _unchanged(raw: str) -> dict[str, Any]:
    """The condition "the stored JSON text is still ``raw``" of a DynamoDB write."""
    return {"ConditionExpression": "#v = :raw", "ExpressionAttributeNames": {"#v": "value"},
            "ExpressionAttributeValues": {":raw": {"S": raw}}}


def _restore(args: dict[str, Any]) -> DynamoDBMetadataStore:
    args = dict(args)
    return DynamoDBMetadataStore(args.pop("table"), args.pop("job_name"), **args)
