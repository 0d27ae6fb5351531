"""The MetadataStore abstraction (SEP-11): a small JSON key-value store, namespaced per job.

Startpoints, job models, checkpoint mirrors and Kinesis batch ends live here. Implementations:
``memory:`` (unit tests), ``file:``/object stores through ``pyarrow.fs`` and ``dynamodb://TABLE`` through boto3.
Every write is atomic (no reader ever sees a torn value) and the conditional operations are what make
startpoint deletion safe against a concurrent writer: ``delete_if_equal`` never removes a newer value.

Keys are scoped as ``<job>/<namespace>/<key>``; ``job`` is validated so it cannot escape its namespace.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..options.common import JOB_NAME
from . import errors
from .errors import FormatVersionError, InternalError, MetadataStoreError

JsonValue = Any  # a value json.dumps accepts: dict, list, str, int, float, bool, None

_JOB_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@:+=-]{0,199}$")
_NAMESPACE_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")


def validate_job_name(job_name: Any) -> str:
    """Refuse job names that could escape the store's namespace ('..', '/', control characters ...)."""
    if not isinstance(job_name, str) or not _JOB_NAME_RE.match(job_name) or ".." in job_name:
        raise errors.invalid_option(
            f"{JOB_NAME.name} {job_name!r:.80} is not allowed: use 1-200 characters from letters, digits and "
            "'._@:+=-', starting with a letter or digit, without '..' (it names the job's namespace in the "
            "metadata store, so '/', '..' and control characters are refused)"
        )
    return job_name


def validate_namespace(namespace: str) -> str:
    """The store's namespaces are this package's own (``options/namespaces.py``), never a user's input: one that
    does not match is a bug."""
    if not isinstance(namespace, str) or not _NAMESPACE_RE.match(namespace):
        raise InternalError(f"metadata namespace {namespace!r:.80} must match {_NAMESPACE_RE.pattern}")
    return namespace


#: what a store raises for one record it cannot read (not ours, torn, another key's, a newer format); an I/O
#: failure (``SAMZA_METADATA_STORE_FAILED``) is never a damaged record: it fails the whole listing
DAMAGE_ERRORS = (MetadataStoreError, FormatVersionError)


def is_damage(error: BaseException) -> bool:
    """True for an error about one stored record, false for one about the store (I/O, credentials)."""
    return isinstance(error, DAMAGE_ERRORS) and getattr(error, "condition", "") != errors.METADATA_STORE_FAILED


@dataclass(frozen=True)
class DamagedRecord:
    """One record of a namespace the store could not read, with the store's error naming where it lies."""

    namespace: str
    #: the key its file name or sort key says it holds; None when only its (unreadable) content could tell
    key: str | None
    #: the file, object or item holding it, as the store names it
    location: str
    error: Exception


@dataclass
class StoreScan:
    """Every readable record of a namespace, and apart from them the damaged ones: one damaged record must never
    hide the valid records beside it (the caller applies the rule of docs/guarantees.md to each)."""

    values: dict[str, JsonValue] = field(default_factory=dict)
    damaged: list[DamagedRecord] = field(default_factory=list)

    def values_or_raise(self) -> dict[str, JsonValue]:
        """The values, or the first damaged record's error: for callers whose kind fails on any damage."""
        if self.damaged:
            raise self.damaged[0].error
        return self.values


class MetadataStore(ABC):
    """A JSON key-value store scoped to one job. Keys are free-form strings (any characters)."""

    #: the store's URI with any credentials removed; safe to put in logs and errors
    uri: str
    job_name: str
    #: True when put_if_absent / delete_if_equal / replace_if_equal are atomic against concurrent writers (local
    #: files, DynamoDB, S3 with conditional writes);
    #: False for object stores without conditional writes (check-then-act, best effort)
    atomic_conditionals: bool = True

    @abstractmethod
    def get(self, namespace: str, key: str) -> JsonValue | None:
        """The value stored under ``key``, or None when absent."""

    @abstractmethod
    def put(self, namespace: str, key: str, value: JsonValue) -> None:
        """Store ``value`` atomically, replacing any previous value."""

    @abstractmethod
    def put_if_absent(self, namespace: str, key: str, value: JsonValue) -> bool:
        """Store ``value`` only if ``key`` is absent; True if this call stored it."""

    @abstractmethod
    def delete(self, namespace: str, key: str) -> None:
        """Remove ``key``; absent keys are not an error."""

    def delete_many(self, namespace: str, keys: Iterable[str]) -> None:
        """Remove every one of ``keys``; absent keys are not an error. Not atomic as a whole: a failure can leave
        some removed. A store with a bulk delete (S3's DeleteObjects, DynamoDB's BatchWriteItem) overrides this, so
        a clean-up of a thousand records is a few requests, not a thousand."""
        for key in keys:
            self.delete(namespace, key)

    @abstractmethod
    def delete_if_equal(self, namespace: str, key: str, expected: JsonValue) -> bool:
        """Remove ``key`` only if its current value equals ``expected`` (JSON equality); True if removed."""

    @abstractmethod
    def replace_if_equal(self, namespace: str, key: str, expected: JsonValue, value: JsonValue) -> bool:
        """Store ``value`` only if the current value of ``key`` equals ``expected`` (JSON equality); True if this
        call stored it. An absent key never matches. Compare-and-set: unlike ``delete_if_equal`` followed by
        ``put_if_absent``, the key is never absent in between, so nobody can claim it there."""

    @abstractmethod
    def list(self, namespace: str) -> dict[str, JsonValue]:
        """Every key and value in ``namespace``; the first damaged record's error if any is damaged."""

    def scan(self, namespace: str) -> StoreScan:
        """Every readable key and value in ``namespace``, and the damaged records apart (never raised for).

        A store that can hold bytes it did not write (files, objects, items) overrides this; one that cannot
        (memory) has no damaged records."""
        return StoreScan(self.list(namespace))

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release clients; the store must not be used afterwards."""

    def __enter__(self) -> MetadataStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
