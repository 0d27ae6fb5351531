"""JobModelStore: the job model a samza-kafka job keeps in its metadata store, and the one before it.

SEP-5 and SEP-11 make the previous job model the input of every grouper, and the model also lives in every Spark
offset; the stored copy is what a query with a *new* checkpoint and the same ``job.name`` starts from (same tasks,
same SSP -> task mapping), what a batch read with ``job.name`` groups by, and what the CLI shows
(docs/architecture.md §5). Written by the Kafka coordinator whenever the model changes; read by it, by its batch
read and by ``samza-source`` (``jobmodel show``, ``lag``, ``startpoint``). samza-kinesis keeps its job model in the
Spark offset only.

Layout: namespace ``jobmodel``, key ``current`` (the model in force) and ``previous`` (the one it replaced, kept so
the CLI can show what changed); values are ``JobModel.to_json``. Like the other store classes in ``core/``, it does
no I/O of its own: every operation goes through the ``MetadataStore`` it is given.
"""

from __future__ import annotations

import logging
from typing import Any

from ..options.namespaces import JOB_MODEL, JOB_MODEL_CURRENT, JOB_MODEL_PREVIOUS
from . import errors
from .damage import rule_for_namespace
from .errors import FormatVersionError, SamzaSourceError
from .jobmodel import JobModel
from .store import DAMAGE_ERRORS, MetadataStore, is_damage

log = logging.getLogger(__name__)

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
        written) when it is the current one already, so an unchanged model costs one read per plan."""
        try:
            current = self._read_value(JOB_MODEL_CURRENT)
        except SamzaSourceError as err:
            if err.condition != errors.JOB_MODEL_INVALID:
                raise  # the store failed, or a newer release wrote it: not ours to replace
            log.warning("replacing the damaged job model %s with the one in force (%s)",
                        self._where(JOB_MODEL_CURRENT), err.detail)
            current = None  # damaged: not kept as the previous model either
        if current == model.to_json():
            return False
        if current is not None:
            self._store.put(JOB_MODEL, JOB_MODEL_PREVIOUS, current)
        self._store.put(JOB_MODEL, JOB_MODEL_CURRENT, model.to_json())
        return True

    def _where(self, key: str) -> str:
        return (f"at key {key!r} of namespace {JOB_MODEL!r} of job {self._store.job_name!r} in metadata store "
                f"{self._store.uri} (kind: job model)")

    def _read_value(self, key: str) -> Any:
        """The stored value, checked to be a job model; the kind's error naming where it lies when damaged."""
        try:
            value = self._store.get(JOB_MODEL, key)
            if value is not None:
                JobModel.from_json(value)
        except FormatVersionError as exc:
            raise errors.format_version_unknown(f"job model {self._where(key)}: {exc.detail}") from None
        except DAMAGE_ERRORS as exc:
            if not is_damage(exc):
                raise  # the store failed, not the record
            raise errors.job_model_invalid(f"damaged job model {self._where(key)}: {exc}. Repair: {REPAIR}") from None
        except SamzaSourceError as err:
            raise errors.job_model_invalid(
                f"damaged job model {self._where(key)}: {err.detail}. Repair: {REPAIR}") from None
        return value

    def _read(self, key: str) -> JobModel | None:
        value = self._read_value(key)
        return None if value is None else JobModel.from_json(value)
