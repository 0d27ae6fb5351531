"""JobModelStore: the job model a samza-kafka job keeps in its metadata store, and the one before it.

SEP-5 and SEP-11 make the previous job model the input of every grouper, and the model also lives in every Spark
offset; the stored copy is what a query with a *new* checkpoint and the same ``job.name`` starts from (same tasks,
same SSP -> task mapping), what a batch read with ``job.name`` groups by, and what the CLI shows
(docs/architecture.md §5). Written by the Kafka coordinator whenever the model changes; read by it, by its batch
read and by ``samza-source`` (``jobmodel show``, ``lag``, ``startpoint``). samza-kinesis keeps its job model in the
Spark offset only.

Layout: namespace ``jobmodel``, key ``current`` (the model in force) and ``previous`` (the one it replaced, kept so
the CLI can show what changed); values are ``JobModel.to_json``, stored through ``core/large_values.py``: inline
up to 100 KB as every earlier release wrote them, larger ones (a job over thousands of partitions) compressed in
chunks behind one pointer, published as one version. Like the other store classes in ``core/``, it does
no I/O of its own: every operation goes through the ``MetadataStore`` it is given.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from typing import Any

from ..options.namespaces import JOB_MODEL, JOB_MODEL_CURRENT, JOB_MODEL_PREVIOUS
from . import errors
from .damage import rule_for_namespace
from .errors import FormatVersionError, SamzaSourceError
from .jobmodel import JobModel
from .large_values import LargeValues, Pointer, canonical_text, is_pointer
from .store import DAMAGE_ERRORS, MetadataStore, is_damage

log = logging.getLogger(__name__)

_UNREAD = object()  # _read_value's ``raw`` when the record is still to be read

#: what repairs a damaged stored job model (the rule's row in docs/guarantees.md)
REPAIR = rule_for_namespace(JOB_MODEL).repair

__all__ = ["JobModelStore"]


class JobModelStore:
    """The stored job model of one job. Reading a damaged one (bytes the store cannot read, or a value that is
    not a job model) raises ``SAMZA_JOB_MODEL_INVALID`` naming where it lies (``FormatVersionError`` for a newer
    format): the caller says what to do about it (the damaged-record rule, docs/guarantees.md: fail). Writing
    over a damaged one says so first: it is never replaced silently."""

    def __init__(self, store: MetadataStore) -> None:
        self._store = store
        self._values = LargeValues(store)

    @property
    def store(self) -> MetadataStore:
        return self._store

    def current(self) -> JobModel | None:
        """The job model in force, or None when none was stored."""
        return self._read(JOB_MODEL_CURRENT)

    def previous(self) -> JobModel | None:
        """The job model the current one replaced, or None."""
        return self._read(JOB_MODEL_PREVIOUS)

    def write(self, model: JobModel) -> bool:
        """Store ``model`` as the current job model, the one it replaces as the previous; False (nothing
        written) when it is the current one already, so an unchanged model costs one read per plan (a chunked one
        too: its pointer's digest is compared, its chunks are not read)."""
        new = model.to_json()
        replaced: Any = None  # the record as stored: unknown when unreadable (no chunks of it are deleted then)
        try:
            replaced = self._checked(JOB_MODEL_CURRENT, lambda: self._store.get(JOB_MODEL, JOB_MODEL_CURRENT))
            if _same_version(replaced, new):
                return False
            current = self._read_value(JOB_MODEL_CURRENT, replaced)
        except SamzaSourceError as err:
            if err.condition != errors.JOB_MODEL_INVALID:
                raise  # the store failed, or a newer release wrote it: not ours to replace
            log.warning("replacing the damaged job model %s with the one in force (%s)",
                        self._where(JOB_MODEL_CURRENT), err.detail)
            current = None  # damaged: not kept as the previous model either
        if current == new:
            return False
        if current is not None:
            self._values.put(JOB_MODEL, JOB_MODEL_PREVIOUS, current)
        self._values.put(JOB_MODEL, JOB_MODEL_CURRENT, new, replaced=replaced)
        return True

    def _where(self, key: str) -> str:
        return (f"at key {key!r} of namespace {JOB_MODEL!r} of job {self._store.job_name!r} in metadata store "
                f"{self._store.uri} (kind: job model)")

    def _read_value(self, key: str, raw: Any = _UNREAD) -> Any:
        """The stored value (from ``raw``, the record as stored, when the caller has read it), checked to be a job
        model; the kind's error naming where it lies when damaged (a chunk of it missing or torn too)."""

        def read() -> Any:
            record = self._store.get(JOB_MODEL, key) if raw is _UNREAD else raw
            value = self._values.resolve(JOB_MODEL, key, record)
            if value is not None:
                JobModel.from_json(value)
            return value

        return self._checked(key, read)

    def _checked(self, key: str, read: Callable[[], Any]) -> Any:
        """``read()``, its damage turned into the kind's error naming where it lies."""
        try:
            return read()
        except FormatVersionError as exc:
            raise errors.format_version_unknown(f"job model {self._where(key)}: {exc.detail}") from None
        except DAMAGE_ERRORS as exc:
            if not is_damage(exc):
                raise  # the store failed, not the record
            raise errors.job_model_invalid(f"damaged job model {self._where(key)}: {exc}. Repair: {REPAIR}") from None
        except SamzaSourceError as err:
            raise errors.job_model_invalid(
                f"damaged job model {self._where(key)}: {err.detail}. Repair: {REPAIR}") from None

    def _read(self, key: str) -> JobModel | None:
        value = self._read_value(key)
        return None if value is None else JobModel.from_json(value)


def _same_version(raw: Any, value: Any) -> bool:
    """True when the stored record already holds ``value``: compared whole when inline, by digest when chunked."""
    if not is_pointer(raw):
        return bool(raw == value)
    try:
        return Pointer.from_json(raw, "").sha256 == hashlib.sha256(canonical_text(value)).hexdigest()
    except SamzaSourceError:
        return False
