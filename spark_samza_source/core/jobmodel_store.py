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

from ..options.namespaces import JOB_MODEL, JOB_MODEL_CURRENT, JOB_MODEL_PREVIOUS
from .jobmodel import JobModel
from .store import MetadataStore

__all__ = ["JobModelStore"]


class JobModelStore:
    """The stored job model of one job. Reading a value that does not parse raises ``SamzaSourceError`` (or
    ``FormatVersionError`` for a newer format): the caller says what to do about it."""

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
        current = self._store.get(JOB_MODEL, JOB_MODEL_CURRENT)
        if current == model.to_json():
            return False
        if current is not None:
            self._store.put(JOB_MODEL, JOB_MODEL_PREVIOUS, current)
        self._store.put(JOB_MODEL, JOB_MODEL_CURRENT, model.to_json())
        return True

    def _read(self, key: str) -> JobModel | None:
        value = self._store.get(JOB_MODEL, key)
        return None if value is None else JobModel.from_json(value)
