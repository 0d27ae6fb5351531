"""``s3://BUCKET/PREFIX`` metadata store on boto3, exact through S3's conditional writes.

Why not ``pyarrow.fs`` (which served ``s3://`` before): it has no conditional writes, so the job lease, the
Kinesis batch ends and startpoint deletion were check-then-act there. S3 has them (2024): ``PutObject`` with
``If-None-Match: *`` creates only an absent object, ``DeleteObject`` with ``If-Match: <ETag>`` deletes only the
version that was read. With them:

- ``put_if_absent`` = ``PutObject(IfNoneMatch="*")``; 412 PreconditionFailed means another writer's object is
  there (False), unless it is this very write (a retry after a lost reply: each write carries a random
  ``writer`` id, so that case reads back as our own bytes and counts as won);
- ``delete_if_equal`` = read the value and its ETag, compare (JSON equality), ``DeleteObject(IfMatch=etag)``;
  a 412 means the object changed in between: read again (bounded);
- ``replace_if_equal`` (compare-and-set) = read the value and its ETag, compare, ``PutObject(IfMatch=etag)``; a
  412 means the object changed in between (or this very put landed and was sent again): read again (bounded);
- a PUT publishes a whole object or nothing, so neither a concurrent reader nor a SIGKILLed writer ever leaves a
  torn value; ``put`` and ``delete`` are plain.
- 409 ConditionalRequestConflict (two conditional writes on one key at the same instant) is retried.

Object stores that do not implement these conditions (they answer 501 NotImplemented, or silently ignore the
header) are found by a probe before the first conditional operation of a process: create a probe object with
``If-None-Match: *`` twice (the second must fail), replace it and delete it with a wrong ``If-Match`` (both must
fail), then delete it with the right one. A store that fails the probe is used best effort (check-then-act,
``atomic_conditionals = False``) and says so once in the log. The probe's result is kept per endpoint and bucket
for the process.

Layout and envelope are those of the ``file:`` store (``filesystem``), so a prefix written through pyarrow's
``s3://`` before is read as is::

    <PREFIX>/<job>/<namespace>/<encoded key>.json   {"format": 1, "key": "<key>", "value": <JSON>, "writer": "<id>"}

URI: ``s3://[ACCESS_KEY:SECRET_KEY@]BUCKET[/PREFIX][?param=value&...]``. Parameters: ``region``, ``endpoint``
(an ``http(s)://host[:port]`` URL, for MinIO and other S3-compatible stores; pyarrow's ``endpoint_override`` plus
``scheme`` are accepted too), ``addressing_style`` (``path``, ``virtual`` or ``auto``; default ``path`` when an
endpoint is named, as MinIO needs, otherwise ``auto``), ``profile``, ``access_key``/``aws_access_key_id``,
``secret_key``/``aws_secret_access_key``, ``session_token``/``aws_session_token`` and ``max_attempts``
(attempts per call, the first included, under botocore's standard retries, as for ``dynamodb://``; default 8).
Credentials are best left to boto3's chain (environment, profile, instance or task role); given in the URI, they
never appear in ``store.uri``, errors or logs.
"""

from __future__ import annotations

import logging
import random
import re
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
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
from .filesystem import SUFFIX, decode_envelope, decode_name, encode_envelope, encode_key, hashed_name
from .uri import OPTION, _userinfo_span, redact_uri, scrub_secrets

__all__ = ["S3MetadataStore", "parse_s3_uri", "URI_PARAMETERS"]

log = logging.getLogger(__name__)

#: accepted URI parameters (lower case) -> constructor argument
URI_PARAMETERS = {
    "region": "region", "region_name": "region",
    "endpoint": "endpoint", "endpoint_url": "endpoint", "endpointurl": "endpoint",
    "endpoint_override": "endpoint_override", "scheme": "scheme",
    "addressing_style": "addressing_style",
    "profile": "profile", "profile_name": "profile",
    "access_key": "access_key", "aws_access_key_id": "access_key",
    "secret_key": "secret_key", "aws_secret_access_key": "secret_key",
    "session_token": "session_token", "aws_session_token": "session_token",
    "max_attempts": "max_attempts",
}
ADDRESSING_STYLES = ("path", "virtual", "auto")
DEFAULT_MAX_ATTEMPTS = 8
#: re-reads of delete_if_equal (and retries of a 409 conflict) before giving up on a key that keeps changing
MAX_CONDITIONAL_ATTEMPTS = 50
_BUCKET_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$")
#: S3's limit of keys in one DeleteObjects request
_DELETE_OBJECTS_MAX = 1000
#: threads reading a listing's objects: botocore's default connection pool holds 10, so more would queue for a
#: connection (or warn that the pool is full) rather than add round trips in flight
_LISTING_READERS = 10
_WRONG_ETAG = '"00000000000000000000000000000000"'

#: (endpoint, bucket) -> (conditional writes honoured, why not); one probe per process and bucket
_PROBED: dict[tuple[str, str], tuple[bool, str]] = {}
_PROBED_LOCK = threading.Lock()


def _bad(uri: str, problem: str) -> ConfigError:
    return errors.invalid_option(
        f"{OPTION} {redact_uri(uri)!r}: {problem}. Expected s3://BUCKET/PREFIX?region=REGION (optional: endpoint="
        f"http(s)://HOST:PORT for MinIO and other S3-compatible stores, addressing_style, profile, access_key, "
        f"secret_key, session_token, max_attempts; credentials are best left to boto3's default chain)"
    )


def parse_s3_uri(uri: str) -> dict[str, Any]:
    """The constructor arguments an ``s3://`` URI names; ConfigError (naming the option and the fix) otherwise.

    No I/O: ``check_store_uri`` calls this when a query is defined.
    """
    if not uri.lower().startswith("s3://"):
        raise _bad(uri, "not an s3:// URI")
    cfg: dict[str, Any] = {}
    span = _userinfo_span(uri)
    authority_start = 5
    if span is not None:
        user, sep, password = uri[span[0]:span[1]].partition(":")
        if not sep or not user or not password:
            raise _bad(uri, "credentials before the bucket must be ACCESS_KEY:SECRET_KEY@")
        cfg["access_key"], cfg["secret_key"] = urllib.parse.unquote(user), urllib.parse.unquote(password)
        authority_start = span[1] + 1
    rest = uri[authority_start:]
    if "#" in rest:
        raise _bad(uri, "an s3:// URI takes no '#' part")
    rest, _, query = rest.partition("?")
    bucket, _, path = rest.partition("/")
    bucket = urllib.parse.unquote(bucket)
    if not bucket:
        raise _bad(uri, "the bucket is missing; write s3://BUCKET/PREFIX")
    if not _BUCKET_RE.match(bucket):
        raise _bad(uri, f"bucket name {bucket!r:.80} is not an S3 bucket name")
    cfg["bucket"] = bucket
    cfg["prefix"] = urllib.parse.unquote(path).strip("/")
    if "//" in cfg["prefix"]:
        raise _bad(uri, "the prefix has an empty segment ('//')")
    for name, value in urllib.parse.parse_qsl(query, keep_blank_values=True):
        canonical = URI_PARAMETERS.get(name.lower())
        if canonical is None:
            raise _bad(uri, f"unknown parameter {name!r:.40}; accepted: {', '.join(sorted(URI_PARAMETERS))}")
        if canonical == "max_attempts":
            if not value.isdigit() or not 1 <= int(value) <= 20:
                raise _bad(uri, f"max_attempts must be an integer from 1 to 20, not {value!r:.20}")
            cfg[canonical] = int(value)
        elif canonical == "addressing_style":
            if value.lower() not in ADDRESSING_STYLES:
                raise _bad(uri, f"addressing_style must be one of {', '.join(ADDRESSING_STYLES)}, not {value!r:.20}")
            cfg[canonical] = value.lower()
        elif value:
            cfg[canonical] = value
    override, scheme = cfg.pop("endpoint_override", None), cfg.pop("scheme", None)
    if scheme is not None and scheme.lower() not in ("http", "https"):
        raise _bad(uri, f"scheme must be http or https, not {scheme!r:.20}")
    if override is not None:
        if "endpoint" in cfg:
            raise _bad(uri, "give endpoint or endpoint_override, not both")
        cfg["endpoint"] = override if "://" in override else f"{(scheme or 'https').lower()}://{override}"
    endpoint = cfg.get("endpoint")
    if endpoint is not None and not re.match(r"^https?://[^/?#]+/?$", endpoint):
        raise _bad(uri, f"endpoint {redact_uri(endpoint)!r:.100} must be an http:// or https:// URL (host and port)")
    if ("access_key" in cfg) != ("secret_key" in cfg):
        raise _bad(uri, "give both access_key and secret_key, or neither (boto3's default chain)")
    return cfg


#: the answers to a conditional write that ``_if_equal`` handles itself (``_call`` wraps every other failure)
_CONDITION_ANSWERS = ("PreconditionFailed", "412", "ConditionalRequestConflict", "409", "NoSuchKey", "404")


def _error_code(exc: BaseException) -> tuple[str, int]:
    response = getattr(exc, "response", None) or {}
    code = str(response.get("Error", {}).get("Code", ""))
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
    return code, int(status or 0)


def _is(exc: BaseException, *codes: str) -> bool:
    """Whether ``exc`` carries one of ``codes``: an S3 error code, or an HTTP status when the answer had no code
    (HEAD and some S3-compatible stores). A 404 NoSuchBucket is not a missing key."""
    code, status = _error_code(exc)
    return code in codes or ((not code or code == str(status)) and str(status) in codes)


class S3MetadataStore(MetadataStore):
    """A MetadataStore under one prefix of an S3 bucket (or an S3-compatible store), one object per key."""

    def __init__(
        self,
        bucket: str,
        job_name: str,
        *,
        prefix: str = "",
        region: str | None = None,
        endpoint: str | None = None,
        addressing_style: str | None = None,
        profile: str | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        session_token: str | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        uri: str | None = None,
    ) -> None:
        """Twelve parameters, keyword-only past the second: one per part of the ``s3://`` URI (``parse_s3_uri`` parses
        them), kept as they are in ``_init_args`` so a pickled store re-creates its client on an executor."""
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError

        self._init_args = dict(bucket=bucket, job_name=job_name, prefix=prefix, region=region, endpoint=endpoint,
                               addressing_style=addressing_style, profile=profile, access_key=access_key,
                               secret_key=secret_key, session_token=session_token, max_attempts=max_attempts,
                               uri=uri)
        self.job_name = validate_job_name(job_name)
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self._raw_uri = uri or ""
        self.uri = redact_uri(uri) if uri else f"s3://{bucket}/{self.prefix}"
        style = addressing_style or ("path" if endpoint else "auto")

        def make_client():
            session = boto3_session(
                aws_access_key_id=access_key, aws_secret_access_key=secret_key, aws_session_token=session_token,
                region_name=region, profile_name=profile,
            )
            return session.client(
                "s3", endpoint_url=endpoint, region_name=region or session.region_name or "us-east-1",
                config=Config(retries={"mode": "standard", "total_max_attempts": max_attempts}, connect_timeout=10,
                              read_timeout=30, s3={"addressing_style": style}),
            )

        try:
            self._client = shared_client(("s3", access_key, secret_key, session_token, region, profile, endpoint, style,
                                          max_attempts), make_client)
        except BotoCoreError as exc:  # ProfileNotFound ...
            raise errors.invalid_option(
                f"{OPTION} {self.uri!r}: cannot create an S3 client: {scrub_secrets(str(exc), self._raw_uri)}"
            ) from None
        self._probe_key = (str(self._client.meta.endpoint_url), bucket)
        self._honoured: bool | None = None  # conditional writes honoured? (None: not probed yet)
        self._probe_lock = threading.Lock()

    @classmethod
    def from_uri(cls, uri: str, job_name: str) -> S3MetadataStore:
        validate_job_name(job_name)
        cfg = parse_s3_uri(uri)
        return cls(cfg.pop("bucket"), job_name, uri=uri, **cfg)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as constructor arguments (boto3 clients do not pickle), e.g. to ship a store to executors."""
        return (_restore, (self._init_args,))

    def close(self) -> None:
        """Nothing to release: the client is the process's (``aws_clients``), shared by the stores opened with the
        same settings, and closing it would close theirs."""

    # -- names --------------------------------------------------------------------------------------------
    def _dir(self, namespace: str) -> str:
        parts = [self.prefix, self.job_name, validate_namespace(namespace)]
        return "/".join(p for p in parts if p) + "/"

    def _object_key(self, namespace: str, key: str) -> str:
        return self._dir(namespace) + encode_key(key) + SUFFIX

    def _where(self, namespace: str | None, key: str | None) -> str:
        k = f"key {key!r:.200} in " if key is not None else ""
        ns = f"namespace {namespace!r} of " if namespace is not None else ""
        return f"{k}{ns}job {self.job_name!r} in metadata store {self.uri}"

    # -- calls --------------------------------------------------------------------------------------------
    def _fail(self, op: str, namespace: str | None, key: str | None, exc: BaseException) -> MetadataStoreError:
        from botocore.exceptions import ClientError, NoCredentialsError

        detail = scrub_secrets(f"{type(exc).__name__}: {exc}", self._raw_uri)
        hint = f" Check the endpoint ({self._client.meta.endpoint_url}) and the network."
        if isinstance(exc, NoCredentialsError):
            hint = (" Configure AWS credentials (environment, profile, instance role), or add access_key and "
                    f"secret_key to {OPTION}.")
        elif isinstance(exc, ClientError):
            code, _ = _error_code(exc)
            if code == "NoSuchBucket":
                hint = f" Create bucket {self.bucket!r} or name an existing one in {OPTION}."
            elif code in ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "Forbidden", "403"):
                hint = (f" Check the credentials and their permissions on s3://{self.bucket}/{self.prefix} "
                        "(s3:GetObject, s3:PutObject, s3:DeleteObject, s3:ListBucket).")
            else:
                hint = ""
        return errors.metadata_store_failed(f"{op} failed for {self._where(namespace, key)}: {detail}.{hint}")

    def _call(self, op: str, namespace: str, key: str | None, fn: Callable[..., Any], *expected: str,
              **kwargs: Any) -> Any:
        """Run a client call. Errors whose code is in ``expected`` propagate; every other failure is wrapped."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return fn(Bucket=self.bucket, **kwargs)
        except ClientError as exc:
            if expected and _is(exc, *expected):
                raise
            raise self._fail(op, namespace, key, exc) from None
        except BotoCoreError as exc:
            raise self._fail(op, namespace, key, exc) from None

    def _read(self, op: str, namespace: str, key: str) -> tuple[bytes, str] | None:
        """(bytes, ETag) of the key's object, or None when absent: the ETag is what the conditions compare."""
        try:
            resp = self._call(op, namespace, key, self._client.get_object, "NoSuchKey", "404",
                              Key=self._object_key(namespace, key))
        except Exception as exc:
            if _is(exc, "NoSuchKey", "404"):
                return None
            raise
        with resp["Body"] as body:
            return body.read(), resp["ETag"]

    def _dump(self, namespace: str, key: str, value: JsonValue) -> bytes:
        # a writer id makes every write's bytes unique, so a retried write that meets 412 can recognise its own
        return encode_envelope(key, value, self._where(namespace, key), writer=uuid.uuid4().hex)

    def _load(self, namespace: str, key: str | None, object_key: str, raw: bytes) -> tuple[str, JsonValue]:
        """(stored key, value) of an object's bytes; MetadataStoreError for anything that is not our envelope."""
        where = self._where(namespace, key)
        location = f"object s3://{self.bucket}/{object_key}"
        stored_key, value = decode_envelope(raw, where, location, "object")
        if key is not None and stored_key != key:
            raise errors.metadata_value_invalid(
                f"corrupt value for {where}: {location} holds key {stored_key!r:.200} "
                "(was it copied by hand?). Delete that object or move it back"
            )
        return stored_key, value

    # -- conditional writes: honoured by this server? -----------------------------------------------------
    @property
    def atomic_conditionals(self) -> bool:  # type: ignore[override]
        """True when put_if_absent/delete_if_equal are atomic: the server honours S3's conditional writes.

        The first access (or the first conditional operation) probes the server, once per process and bucket."""
        return self._conditionals()

    def _conditionals(self) -> bool:
        """Whether the server honours If-None-Match / If-Match (probed once per process, endpoint and bucket)."""
        if self._honoured is not None:
            return self._honoured
        with self._probe_lock:
            if self._honoured is None:
                with _PROBED_LOCK:
                    known = _PROBED.get(self._probe_key)
                if known is None:
                    known = self._probe()
                    with _PROBED_LOCK:
                        first = self._probe_key not in _PROBED
                        _PROBED.setdefault(self._probe_key, known)
                    if first and not known[0]:
                        log.warning(
                            "metadata store %s: this S3-compatible store does not honour conditional writes (%s), "
                            "so put_if_absent and delete_if_equal are best effort here: two concurrent writers may "
                            "both succeed. The job lease and the Kinesis batch ends are exact only on a store that "
                            "does (AWS S3, recent MinIO), file: on a POSIX filesystem or dynamodb://",
                            self.uri, known[1])
                self._honoured = known[0]
        return self._honoured

    def _probe(self) -> tuple[bool, str]:
        """Create, re-create, wrongly replace, wrongly delete and delete a probe object; (honoured, reason when
        not)."""
        from botocore.exceptions import BotoCoreError, ClientError

        probe = "/".join(p for p in (self.prefix, self.job_name) if p) + f"/.conditional-write-probe-{uuid.uuid4().hex}"
        put = self._client.put_object
        body = uuid.uuid4().hex.encode("ascii")
        try:
            try:
                etag = put(Bucket=self.bucket, Key=probe, Body=body, IfNoneMatch="*")["ETag"]
            except ClientError as exc:
                if _is(exc, "NotImplemented", "501", "InvalidArgument", "400"):
                    return False, f"PutObject with If-None-Match answered {_error_code(exc)[0] or exc}"
                if not _is(exc, "PreconditionFailed", "412"):
                    raise
                # botocore re-sent our write after losing the reply: the object there must be ours
                mine = self._client.get_object(Bucket=self.bucket, Key=probe)
                with mine["Body"] as stream:
                    if stream.read() != body:
                        raise
                etag = mine["ETag"]
            try:
                put(Bucket=self.bucket, Key=probe, Body=body, IfNoneMatch="*")
                return False, "PutObject with If-None-Match: * replaced an existing object"
            except ClientError as exc:
                if not _is(exc, "PreconditionFailed", "412", "ConditionalRequestConflict", "409"):
                    return False, f"PutObject with If-None-Match answered {_error_code(exc)[0] or exc}"
            try:
                put(Bucket=self.bucket, Key=probe, Body=b"replaced", IfMatch=_WRONG_ETAG)
                return False, "PutObject with a wrong If-Match replaced the object"
            except ClientError as exc:
                if not _is(exc, "PreconditionFailed", "412", "ConditionalRequestConflict", "409"):
                    return False, f"PutObject with If-Match answered {_error_code(exc)[0] or exc}"
            try:
                self._client.delete_object(Bucket=self.bucket, Key=probe, IfMatch=_WRONG_ETAG)
                return False, "DeleteObject with a wrong If-Match deleted the object"
            except ClientError as exc:
                if not _is(exc, "PreconditionFailed", "412"):
                    return False, f"DeleteObject with If-Match answered {_error_code(exc)[0] or exc}"
            try:
                self._client.delete_object(Bucket=self.bucket, Key=probe, IfMatch=etag)
            except ClientError as exc:
                return False, f"DeleteObject with the object's own ETag in If-Match answered {_error_code(exc)[0]}"
            return True, ""
        except (ClientError, BotoCoreError) as exc:
            raise self._fail("probing whether the store honours conditional writes", None, None, exc) from None
        finally:
            try:
                self._client.delete_object(Bucket=self.bucket, Key=probe)
            except (ClientError, BotoCoreError):
                pass  # the probe is gone already, or the store is unreachable and the error above says so

    @staticmethod
    def _pause(attempt: int) -> None:
        time.sleep(min(0.005 * 2 ** min(attempt, 6), 0.2) * random.random())

    # -- MetadataStore ------------------------------------------------------------------------------------
    def get(self, namespace: str, key: str) -> JsonValue | None:
        key = str(key)
        found = self._read("get", namespace, key)
        return None if found is None else self._load(namespace, key, self._object_key(namespace, key), found[0])[1]

    def put(self, namespace: str, key: str, value: JsonValue) -> None:
        key = str(key)
        data = self._dump(namespace, key, value)
        self._call("put", namespace, key, self._client.put_object, Key=self._object_key(namespace, key), Body=data,
                   ContentType="application/json")

    def put_if_absent(self, namespace: str, key: str, value: JsonValue) -> bool:
        key = str(key)
        object_key = self._object_key(namespace, key)
        data = self._dump(namespace, key, value)
        if not self._conditionals():
            if self._read("put_if_absent", namespace, key) is not None:
                return False
            self._call("put_if_absent", namespace, key, self._client.put_object, Key=object_key, Body=data,
                       ContentType="application/json")
            return True
        for attempt in range(MAX_CONDITIONAL_ATTEMPTS):
            try:
                self._call("put_if_absent", namespace, key, self._client.put_object, "PreconditionFailed", "412",
                           "ConditionalRequestConflict", "409", Key=object_key, Body=data,
                           ContentType="application/json", IfNoneMatch="*")
                return True
            except Exception as exc:
                if _is(exc, "ConditionalRequestConflict", "409"):
                    self._pause(attempt)  # a concurrent conditional write on this key: S3 asks to retry
                    continue
                if not _is(exc, "PreconditionFailed", "412"):
                    raise
            found = self._read("put_if_absent", namespace, key)
            # our own write, whose first reply was lost and which botocore sent again, reads back byte for byte
            return found is not None and found[0] == data
        raise self._gave_up("put_if_absent", namespace, key)

    def delete(self, namespace: str, key: str) -> None:
        key = str(key)
        self._call("delete", namespace, key, self._client.delete_object, Key=self._object_key(namespace, key))

    def delete_many(self, namespace: str, keys: Iterable[str]) -> None:
        """``DeleteObjects`` of up to 1,000 keys a request (S3's limit): a clean-up of a thousand records is one
        request. Absent keys are deleted without a word, as in ``delete``; a key S3 reports as not deleted fails
        the call with S3's own code and message."""
        object_keys = [self._object_key(namespace, str(key)) for key in keys]
        for first in range(0, len(object_keys), _DELETE_OBJECTS_MAX):
            chunk = object_keys[first:first + _DELETE_OBJECTS_MAX]
            resp = self._call("delete_many", namespace, None, self._client.delete_objects,
                              Delete={"Objects": [{"Key": k} for k in chunk], "Quiet": True})
            failed = resp.get("Errors") or []
            if failed:
                first_error = failed[0]
                raise errors.metadata_store_failed(
                    f"delete_many failed for {len(failed)} of {len(chunk)} objects in "
                    f"{self._where(namespace, None)}: s3://{self.bucket}/{first_error.get('Key')}: "
                    f"{first_error.get('Code')}: {first_error.get('Message')}."
                )

    def delete_if_equal(self, namespace: str, key: str, expected: JsonValue) -> bool:
        """Compare decoded JSON (like every store), then delete only the object version that was compared."""
        key = str(key)
        object_key = self._object_key(namespace, key)

        def delete(conditions: dict[str, str]) -> None:
            self._call("delete_if_equal", namespace, key, self._client.delete_object, *_CONDITION_ANSWERS,
                       Key=object_key, **conditions)

        return self._if_equal("delete_if_equal", namespace, key, expected, delete)

    def replace_if_equal(self, namespace: str, key: str, expected: JsonValue, value: JsonValue) -> bool:
        """Compare decoded JSON, then ``PutObject(IfMatch=etag)`` of the object version that was compared. A put
        whose reply was lost and that botocore sent again meets 412; its bytes (unique by the writer id) read
        back as ours, so it counts as stored."""
        key = str(key)
        object_key = self._object_key(namespace, key)
        data = self._dump(namespace, key, value)

        def replace(conditions: dict[str, str]) -> None:
            self._call("replace_if_equal", namespace, key, self._client.put_object, *_CONDITION_ANSWERS,
                       Key=object_key, Body=data, ContentType="application/json", **conditions)

        return self._if_equal("replace_if_equal", namespace, key, expected, replace, ours=data)

    def _if_equal(self, op: str, namespace: str, key: str, expected: JsonValue,
                  write: Callable[[dict[str, str]], None], *, ours: bytes | None = None) -> bool:
        """Read the value and its ETag, compare with ``expected`` (decoded JSON), then ``write(conditions)``:
        ``If-Match`` on that ETag where the store honours conditional writes, nothing where it does not (best
        effort). 412 / 409 (replaced since the read, or a concurrent conditional write): read again, bounded.
        ``ours``: the bytes this call writes; found on a re-read, a retried request's first attempt landed."""
        object_key = self._object_key(namespace, key)
        exact = self._conditionals()
        for attempt in range(MAX_CONDITIONAL_ATTEMPTS):
            found = self._read(op, namespace, key)
            if found is not None and ours is not None and found[0] == ours:
                return True
            if found is None or self._load(namespace, key, object_key, found[0])[1] != expected:
                return False
            try:
                write({"IfMatch": found[1]} if exact else {})
                return True
            except Exception as exc:
                if _is(exc, "NoSuchKey", "404"):
                    return False  # deleted by someone else since our read
                if not _is(exc, "PreconditionFailed", "412", "ConditionalRequestConflict", "409"):
                    raise
                self._pause(attempt)  # replaced since our read (perhaps by this very request): look again
        raise self._gave_up(op, namespace, key)

    def _gave_up(self, op: str, namespace: str, key: str) -> MetadataStoreError:
        return errors.metadata_write_contended(
            f"{op} gave up on {self._where(namespace, key)} after {MAX_CONDITIONAL_ATTEMPTS} attempts: the value "
            "keeps changing under concurrent writers"
        )

    def list(self, namespace: str) -> dict[str, JsonValue]:
        return self.scan(namespace).values_or_raise()

    def scan(self, namespace: str) -> StoreScan:
        directory = self._dir(namespace)
        found = StoreScan()
        pages = self._call("list", namespace, None, self._client.get_paginator("list_objects_v2").paginate,
                           Prefix=directory, Delimiter="/")
        try:
            names = [obj["Key"][len(directory):] for page in pages for obj in page.get("Contents", [])]
        except Exception as exc:
            from botocore.exceptions import BotoCoreError, ClientError

            if isinstance(exc, (ClientError, BotoCoreError)):
                raise self._fail("list", namespace, None, exc) from None
            raise
        listed: list[tuple[str, str | None, str]] = []
        for name in names:
            if name.startswith(".") or not name.endswith(SUFFIX):
                continue
            stem = name[: -len(SUFFIX)]
            key = decode_name(stem)
            if key is None and not (len(stem) == 65 and stem.startswith("!")):
                continue  # not written by this store
            listed.append((stem, key, directory + name))
        for (stem, key, object_key), raw in zip(listed, self._read_listed_objects(namespace, listed), strict=True):
            if raw is None:
                continue  # deleted since the listing
            try:
                stored_key, value = self._load(namespace, key, object_key, raw)
                if key is None and hashed_name(stored_key) != stem:
                    raise errors.metadata_value_invalid(
                        f"corrupt value in {self._where(namespace, None)}: object s3://{self.bucket}/{object_key} "
                        f"holds key {stored_key!r:.200}, whose hashed name differs. Delete that object or move it "
                        "back"
                    )
            except DAMAGE_ERRORS as exc:
                if not is_damage(exc):
                    raise
                found.damaged.append(DamagedRecord(namespace, key, f"object s3://{self.bucket}/{object_key}", exc))
                continue
            found.values[stored_key] = value
        found.values = dict(sorted(found.values.items()))
        return found

    def _read_listed_objects(self, namespace: str,
                             listed: Sequence[tuple[str, str | None, str]]) -> Sequence[bytes | None]:
        """The listed objects' bytes in listing order, fetched by a bounded pool of threads: S3 has no bulk GET,
        so a listing of a thousand records is a thousand GETs, each a round trip the others need not wait for
        (boto3 clients are thread-safe). The first failure fails the listing, as a single GET would."""
        if len(listed) <= 1:
            return [self._read_listed_object(namespace, key, object_key) for _, key, object_key in listed]
        with ThreadPoolExecutor(max_workers=min(_LISTING_READERS, len(listed)),
                                thread_name_prefix="samza-s3-scan") as pool:
            return list(pool.map(lambda item: self._read_listed_object(namespace, item[1], item[2]), listed))

    def _read_listed_object(self, namespace: str, key: str | None, object_key: str) -> bytes | None:
        """A listed object's bytes; None when it was deleted since the listing."""
        try:
            resp = self._call("list", namespace, key, self._client.get_object, "NoSuchKey", "404", Key=object_key)
        except Exception as exc:
            if _is(exc, "NoSuchKey", "404"):
                return None
            raise
        with resp["Body"] as body:
            data: bytes = body.read()
        return data


def _restore(args: dict[str, Any]) -> S3MetadataStore:
    args = dict(args)
    return S3MetadataStore(args.pop("bucket"), args.pop("job_name"), **args)
