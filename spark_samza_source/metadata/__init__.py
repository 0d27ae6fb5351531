"""Metadata stores (SEP-11): open one from the ``metadata.store`` URI, and keep credentials out of sight.

``open_store(uri, job_name)`` accepts:

- ``memory:`` / ``memory:NAME``: a process-local dict (unit tests of the pure core);
- ``file:///abs/path`` or a plain path (relative paths are made absolute): local files, atomic across processes;
- ``s3://BUCKET/PREFIX?region=R&endpoint=URL``: S3 or an S3-compatible store through boto3, with S3's
  conditional writes (exact; best effort on a store that does not honour them, see ``s3``);
- ``gs://...``, ``abfs://...``, ``hdfs://...``: object stores through ``pyarrow.fs.FileSystem.from_uri``
  (conditional operations are best-effort there, see ``filesystem``);
- ``dynamodb://TABLE?region=R&endpoint=URL``: a DynamoDB table through boto3, with conditional writes.

Store URIs may carry credentials (``s3://KEY:SECRET@bucket``, ``?secret_key=...``). ``redact_uri`` removes
them; every store's ``uri`` attribute, every error and every log line uses the redacted form only.

Backends are imported lazily (``from spark_samza_source.metadata import DynamoDBMetadataStore`` still works),
so opening a ``file:`` store never imports boto3 and opening ``memory:`` never imports pyarrow. The backend
modules import ``redact_uri``/``scrub_secrets`` from ``uri.py``, not from this package, so no import runs in a
circle.
"""

from __future__ import annotations

import logging
import os
import re
import urllib.parse
from typing import TYPE_CHECKING, Any

from ..core import errors
from ..core.errors import ConfigError
from ..core.store import JsonValue, MetadataStore, validate_job_name, validate_namespace
from ..options.common import JOB_NAME
from .uri import (
    _SCHEME_RE,
    OPTION,
    PYARROW_SCHEMES,
    SUPPORTED_FORMS,
    _userinfo_span,
    redact_uri,
    scrub_secrets,
)

if TYPE_CHECKING:  # pragma: no cover
    from .dynamodb import DynamoDBMetadataStore
    from .filesystem import FileSystemMetadataStore
    from .memory import MemoryMetadataStore
    from .s3 import S3MetadataStore

__all__ = [
    "JsonValue",
    "MetadataStore",
    "MemoryMetadataStore",
    "FileSystemMetadataStore",
    "DynamoDBMetadataStore",
    "S3MetadataStore",
    "check_store_uri",
    "open_store",
    "redact_uri",
    "scrub_secrets",
    "validate_job_name",
    "validate_namespace",
    "OPTION",
    "SUPPORTED_FORMS",
]

log = logging.getLogger(__name__)

_LAZY = {
    "MemoryMetadataStore": ".memory",
    "FileSystemMetadataStore": ".filesystem",
    "DynamoDBMetadataStore": ".dynamodb",
    "S3MetadataStore": ".s3",
}

def __getattr__(name: str) -> Any:
    """Import a backend class on first use (PEP 562), so unused client libraries are never imported."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _config_error(uri: str, problem: str) -> ConfigError:
    return errors.invalid_option(f"{OPTION} {redact_uri(uri)!r}: {problem}. Supported forms: {SUPPORTED_FORMS}")


def _file_uri_path(uri: str) -> str:
    parts = urllib.parse.urlsplit(uri)
    if parts.netloc not in ("", "localhost"):
        raise _config_error(uri, f"file: URIs name a local path, not host {parts.netloc!r}; use file:///PATH")
    if parts.query or parts.fragment:
        raise _config_error(uri, "file: URIs take no '?' or '#' part")
    path = urllib.parse.unquote(parts.path)
    if not path:
        raise _config_error(uri, "the path is empty")
    return os.path.abspath(os.path.expanduser(path))


#: object-store schemes whose first URI component is a bucket (or container) that must be named
_BUCKET_SCHEMES = {"s3": "bucket", "gs": "bucket", "gcs": "bucket", "abfs": "container", "abfss": "container"}


def _check_bucket(uri: str, scheme: str) -> None:
    """``s3://`` without a bucket would make pyarrow take the job name for the bucket: refuse it."""
    what = _BUCKET_SCHEMES.get(scheme)
    if what is None:
        return
    rest = uri[len(scheme) + 1:]
    if not rest.startswith("//"):
        raise _config_error(uri, f"{scheme}: URIs are {scheme}://{what.upper()}/PREFIX")
    span = _userinfo_span(uri)
    authority_start = span[1] + 1 if span is not None and scheme.startswith("s3") else len(scheme) + 3
    authority = re.split(r"[/?#]", uri[authority_start:], maxsplit=1)[0]
    if not authority.strip():
        raise _config_error(uri, f"the {what} is missing; write {scheme}://{what.upper()}/PREFIX (the data goes "
                            f"under PREFIX/<{JOB_NAME.name}> in that {what})")


def check_store_uri(uri: str) -> None:
    """Refuse a ``metadata.store`` URI that cannot name a store, without any I/O (a query checks it at
    ``load()``): an empty value, an unknown scheme, ``s3://`` / ``gs://`` without a bucket, ``dynamodb://``
    without a valid table, a ``file:`` URI naming a host. Raises ConfigError naming the option and the fix."""
    if not isinstance(uri, str) or not uri.strip():
        raise errors.invalid_option(f"{OPTION} is empty: set it to one of {SUPPORTED_FORMS}")
    uri = uri.strip()
    m = _SCHEME_RE.match(uri)
    if m is None:
        return  # a plain path
    scheme = m.group(1).lower()
    if scheme == "memory":
        return
    if scheme == "file":
        _file_uri_path(uri)
    elif scheme == "dynamodb":
        from .dynamodb import _parse_uri

        after = uri[m.end() + 2:] if uri.startswith("//", m.end()) else ""
        if not re.split(r"[/?#]", after, maxsplit=1)[0].strip():
            raise _config_error(uri, "the table is missing; write dynamodb://TABLE?region=REGION")
        _parse_uri(uri)
    elif scheme == "s3":
        from .s3 import parse_s3_uri

        _check_bucket(uri, scheme)
        parse_s3_uri(uri)
    elif scheme in PYARROW_SCHEMES:
        _check_bucket(uri, scheme)
    else:
        raise _config_error(uri, f"unknown scheme {scheme!r}")


def open_store(uri: str, job_name: str) -> MetadataStore:
    """Open the metadata store named by ``uri`` (the ``metadata.store`` option) for job ``job_name``.

    Raises ConfigError (naming the option, the redacted URI and the supported forms) for an unknown scheme or a
    malformed URI, and for a job name that could escape its namespace. No I/O happens for ``file:`` until
    the first operation; ``dynamodb:`` checks (or creates) its table on first use.
    """
    validate_job_name(job_name)
    check_store_uri(uri)
    uri = uri.strip()
    m = _SCHEME_RE.match(uri)
    if m is None:  # a plain path
        from .filesystem import FileSystemMetadataStore

        store: MetadataStore = FileSystemMetadataStore.local(os.path.abspath(os.path.expanduser(uri)), job_name)
    else:
        scheme = m.group(1).lower()
        if scheme == "memory":
            from .memory import MemoryMetadataStore

            name = uri[m.end():]
            store = MemoryMetadataStore(job_name, name[2:] if name.startswith("//") else name)
        elif scheme == "file":
            from .filesystem import FileSystemMetadataStore

            store = FileSystemMetadataStore.local(_file_uri_path(uri), job_name)
        elif scheme == "dynamodb":
            from .dynamodb import DynamoDBMetadataStore

            store = DynamoDBMetadataStore.from_uri(uri, job_name)
        elif scheme == "s3":
            from .s3 import S3MetadataStore

            store = S3MetadataStore.from_uri(uri, job_name)
        elif scheme in PYARROW_SCHEMES:
            from .filesystem import FileSystemMetadataStore

            store = FileSystemMetadataStore.from_uri(uri, job_name)
        else:
            raise _config_error(uri, f"unknown scheme {scheme!r}")
    log.debug("opened metadata store %s for job %s", store.uri, job_name)
    return store
