"""StartpointManager (SEP-18): write, read, fan out and safely delete startpoints in a metadata store.

Called by tools (the CLI, user code: :meth:`write`, :meth:`read`, :meth:`list`) and by both coordinators at
planning (:meth:`fan_out`) and commit (:meth:`delete_if_unchanged`). It does no I/O of its own: every operation
goes through the ``MetadataStore`` it is given, so it stays in the pure core.

Layout: namespace ``startpoint``, one key per startpoint (Samza's ``system.stream.partition[.taskName]``, with
``%`` -> ``%25`` and ``.`` -> ``%2E`` inside names so a key maps back to one (SSP, task)), value = Samza's JSON.

Fan-out (:meth:`StartpointManager.fan_out`), at every planning round:

- precedence: an SSP-only startpoint is merged into the SSP+task key of every task holding the SSP in the job
  model, and the newer ``creationTimestamp`` wins there (an SSP+task startpoint written later beats it, and the
  other way round);
- concurrency: every change is one conditional store operation (``put_if_absent``, ``delete_if_equal``), so a
  startpoint written by a tool meanwhile is never lost: a merge re-reads and compares again, and an SSP-only key
  that changed since it was read is kept and fans out at the next round;
- expiry: startpoints older than the TTL are ignored with a warning (``purge_expired`` removes them);
- malformed values, and damaged records the store cannot read (a torn file, another job's or a newer release's):
  an error for operator calls; inside a live query a warning, once per value, and an entry in
  ``FanOutResult.malformed``, never fatal and never hiding the valid startpoints beside them.

The life cycle (write, fan out, resolve, apply, delete only if unchanged) and its reasons: docs/architecture.md §6.
"""

from __future__ import annotations

import builtins  # StartpointManager.list shadows the builtin in its class's annotations
import logging
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

# Samza's StartpointManager default TTL (12 h): the option spec's default, named once there
from ..options.common import DEFAULT_STARTPOINT_TTL_MS
from ..options.namespaces import STARTPOINTS
from . import errors
from .errors import SamzaSourceError, StartpointFormatError
from .jobmodel import JobModel
from .model import SystemStreamPartition, TaskName
from .startpoint import Clock, Startpoint, current_time_ms, truncate_json
from .store import MetadataStore

__all__ = [
    "NAMESPACE",
    "FanOutResult",
    "MalformedStartpoint",
    "StartpointEntry",
    "StartpointManager",
    "parse_startpoint_key",
    "startpoint_key",
]

log = logging.getLogger(__name__)

#: The metadata-store namespace holding every startpoint.
NAMESPACE = STARTPOINTS
#: Conditional-write retries before a key that keeps changing under fan-out is reported as an error.
_MAX_ATTEMPTS = 16

_PART_RE = re.compile(r"(?:[^%.]|%25|%2E)+")
_PARTITION_RE = re.compile(r"0|[1-9][0-9]{0,17}")  # at most 18 digits: int() refuses more than 4300
_UNESCAPE_RE = re.compile(r"%(25|2E)")

SspTask = tuple[SystemStreamPartition, TaskName]


# ---- keys --------------------------------------------------------------------------------------------------


def _escape(part: str) -> str:
    return part.replace("%", "%25").replace(".", "%2E")


def _unescape(part: str) -> str:
    return _UNESCAPE_RE.sub(lambda m: "%" if m.group(1) == "25" else ".", part)


def startpoint_key(ssp: SystemStreamPartition, task: TaskName | str | None = None) -> str:
    """The store key: Samza's ``system.stream.partition[.taskName]`` with ``%``/``.`` escaped inside names."""
    parts = [_escape(ssp.system), _escape(ssp.stream), str(ssp.partition)]
    if task is not None:
        parts.append(_escape(_task(task).name))
    return ".".join(parts)


def parse_startpoint_key(key: str) -> tuple[SystemStreamPartition, TaskName | None]:
    """Invert :func:`startpoint_key`; anything it could not have written raises :class:`StartpointFormatError`."""
    parts = key.split(".") if isinstance(key, str) else []
    if len(parts) not in (3, 4) or not all(_PART_RE.fullmatch(p) for p in parts) or not _PARTITION_RE.fullmatch(
        parts[2]
    ):
        raise errors.startpoint_invalid(
            f"startpoint key {key!r:.200} is not 'system.stream.partition[.task]' with '%' and '.' inside names "
            "escaped as %25 and %2E"
        )
    try:
        ssp = SystemStreamPartition(_unescape(parts[0]), _unescape(parts[1]), int(parts[2]))
        task = TaskName(_unescape(parts[3])) if len(parts) == 4 else None
    except SamzaSourceError as err:
        raise errors.startpoint_invalid(f"startpoint key {key!r:.200}: {err.detail}") from None
    return ssp, task


def _task(task: TaskName | str) -> TaskName:
    return task if isinstance(task, TaskName) else TaskName(task)


def _sort_key(ssp: SystemStreamPartition, task: TaskName | None) -> tuple:
    return (ssp, task is not None, task or TaskName("-"))


# ---- results -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StartpointEntry:
    """One stored startpoint with where it lives (``task`` is None for an SSP-only key)."""

    key: str
    ssp: SystemStreamPartition
    task: TaskName | None
    startpoint: Startpoint
    raw: Any = field(default=None, compare=False, repr=False)  # the stored JSON, for conditional deletes


@dataclass(frozen=True)
class MalformedStartpoint:
    """A key or value in the namespace that is not a valid startpoint (left in the store untouched)."""

    key: str
    value: Any
    error: str


@dataclass
class FanOutResult(Mapping[SspTask, Startpoint]):
    """What :meth:`StartpointManager.fan_out` did. As a mapping it is ``applied``: (SSP, task) -> startpoint.

    - ``applied``: the effective startpoint for every (SSP, task) of the job model that has one, now stored
      under its SSP+task key; the caller resolves these and records their creation timestamps.
    - ``expired``: startpoints older than the TTL, ignored (still stored).
    - ``unknown_ssp``: SSP-only startpoints for SSPs no task holds, and SSP+task startpoints whose task does
      not hold the SSP in this job model; left in place for a later job model.
    - ``malformed``: keys or values that are not valid startpoints; skipped.
    - ``kept``: SSP-only startpoints that were fanned out but not deleted, because the key was rewritten
      between the read and the delete; the newer value is fanned out next time.
    """

    applied: dict[SspTask, Startpoint] = field(default_factory=dict)
    expired: list[StartpointEntry] = field(default_factory=list)
    unknown_ssp: list[StartpointEntry] = field(default_factory=list)
    malformed: list[MalformedStartpoint] = field(default_factory=list)
    kept: list[StartpointEntry] = field(default_factory=list)

    def __getitem__(self, key: SspTask) -> Startpoint:
        return self.applied[key]

    def __iter__(self) -> Iterator[SspTask]:
        return iter(self.applied)

    def __len__(self) -> int:
        return len(self.applied)

    def by_task_ssp(self) -> dict[tuple[TaskName, SystemStreamPartition], Startpoint]:
        """``applied`` keyed (task, SSP), the order ``core.model.TaskSsp`` and the planner use."""
        return {(task, ssp): sp for (ssp, task), sp in self.applied.items()}


# ---- the manager -------------------------------------------------------------------------------------------


class StartpointManager:
    """Reads and writes startpoints of one job through a ``MetadataStore`` (see the module docstring)."""

    def __init__(self, store: MetadataStore, ttl_ms: int = DEFAULT_STARTPOINT_TTL_MS,
                 clock: Clock | None = None) -> None:
        if not isinstance(ttl_ms, int) or isinstance(ttl_ms, bool) or ttl_ms <= 0:
            raise errors.invalid_option(f"startpoint TTL must be a positive number of milliseconds, got {ttl_ms!r:.50}")
        self._store = store
        self.ttl_ms = ttl_ms
        self._clock: Clock = clock or current_time_ms
        self._warned: set[tuple[str, Any]] = set()

    # ---- basic operations --------------------------------------------------------------------------------
    def write(self, ssp: SystemStreamPartition, startpoint: Startpoint, task: TaskName | str | None = None) -> str:
        """Store ``startpoint`` for ``ssp`` (and ``task``), replacing any previous one; returns the key."""
        if not isinstance(ssp, SystemStreamPartition):
            raise errors.startpoint_invalid(f"write() needs a SystemStreamPartition, got {ssp!r:.100}")
        if not isinstance(startpoint, Startpoint):
            raise errors.startpoint_invalid(f"write() needs a Startpoint, got {startpoint!r:.100}")
        key = startpoint_key(ssp, task)
        value = startpoint.to_json()
        if self.is_expired(startpoint):
            log.warning(
                "startpoint %s for key %r in %s is already older than the TTL (%d ms) and will be ignored",
                startpoint.to_json_str(), key, self._store.uri, self.ttl_ms,
            )
        self._store.put(NAMESPACE, key, value)
        return key

    def read(
        self, ssp: SystemStreamPartition, task: TaskName | str | None = None, *, include_expired: bool = False
    ) -> Startpoint | None:
        """The startpoint stored for ``ssp`` (and ``task``), or None; expired ones are None unless asked for.

        A value that is not a valid startpoint raises :class:`StartpointFormatError` naming the store and key.
        """
        key = startpoint_key(ssp, task)
        raw = self._store.get(NAMESPACE, key)
        if raw is None:
            return None
        startpoint = self._parse(key, raw)
        if not include_expired and self.is_expired(startpoint):
            self._warn_expired(key, startpoint)
            return None
        return startpoint

    def delete(self, ssp: SystemStreamPartition, task: TaskName | str | None = None) -> None:
        """Remove the startpoint for ``ssp`` (and ``task``) unconditionally (operator action)."""
        self._store.delete(NAMESPACE, startpoint_key(ssp, task))

    def list(self, *, skip_malformed: bool = False) -> list[StartpointEntry]:
        """Every stored startpoint (expired ones included; see :meth:`is_expired`), sorted by SSP then task.

        A malformed key or value raises :class:`StartpointFormatError` naming the store and every bad key,
        unless ``skip_malformed`` (then they are logged and left out).
        """
        entries, malformed = self._scan()
        if malformed and not skip_malformed:
            details = "; ".join(f"key {m.key!r:.200}: {m.error}" for m in malformed[:5])
            more = f" (and {len(malformed) - 5} more)" if len(malformed) > 5 else ""
            raise errors.startpoint_invalid(
                f"{self._where()} holds {len(malformed)} malformed startpoint(s){more}: {details}; "
                "rewrite or delete those keys"
            )
        for bad in malformed:
            log.warning("skipping malformed startpoint in %s key %r: %s", self._store.uri, bad.key, bad.error)
        return entries

    def is_expired(self, startpoint: Startpoint) -> bool:
        """True when ``startpoint`` is at least the TTL old (Samza's rule: valid while ``now - ttl < created``)."""
        return self._clock() - startpoint.creation_timestamp >= self.ttl_ms

    def delete_if_unchanged(
        self, ssp: SystemStreamPartition, task: TaskName | str | None, creation_timestamp: int
    ) -> bool:
        """Delete the startpoint only if the stored one still has ``creation_timestamp``; True if deleted.

        A commit passes the creation timestamp of the startpoint its batch applied, so a newer startpoint
        written meanwhile survives and is applied by a later batch. A malformed value is never deleted here.
        """
        key = startpoint_key(ssp, task)
        raw = self._store.get(NAMESPACE, key)
        if raw is None:
            return False
        try:
            current = self._parse(key, raw)
        except StartpointFormatError as err:
            log.warning("not deleting %s: %s", key, err)
            return False
        if current.creation_timestamp != creation_timestamp:
            log.info(
                "startpoint %r in %s was replaced (creationTimestamp %d, applied %d): keeping the newer one",
                key, self._store.uri, current.creation_timestamp, creation_timestamp,
            )
            return False
        return self._store.delete_if_equal(NAMESPACE, key, raw)

    def purge_expired(self) -> builtins.list[StartpointEntry]:
        """Delete every expired startpoint (each only if unchanged since read); returns those deleted."""
        entries, _ = self._scan()
        return [
            e for e in entries
            if self.is_expired(e.startpoint) and self._store.delete_if_equal(NAMESPACE, e.key, e.raw)
        ]

    # ---- fan-out -----------------------------------------------------------------------------------------
    def fan_out(self, job_model: JobModel) -> FanOutResult:
        """Re-key SSP-only startpoints to SSP+task for every task holding the SSP; report what applies.

        See the module docstring for precedence, concurrency, expiry and malformed values. Safe to call at
        every planning round: with nothing new in the store it changes nothing.
        """
        result = FanOutResult()
        entries, malformed = self._scan()
        effective: dict[SspTask, Startpoint] = {
            (e.ssp, e.task): e.startpoint for e in entries if e.task is not None
        }
        for entry in entries:
            if entry.task is not None:
                continue
            if self.is_expired(entry.startpoint):
                self._warn_expired(entry.key, entry.startpoint)
                result.expired.append(entry)
                continue
            tasks = job_model.tasks_for(entry.ssp)
            if not tasks:
                self._warn_once(
                    (entry.key, entry.startpoint.creation_timestamp),
                    "startpoint %s for %s: no task of the job model holds this SSP; kept for a later job model",
                    entry.startpoint.to_json_str(), entry.ssp,
                )
                result.unknown_ssp.append(entry)
                continue
            for task in tasks:
                effective[(entry.ssp, task)] = self._merge(entry.ssp, task, entry.startpoint)
            if not self._store.delete_if_equal(NAMESPACE, entry.key, entry.raw):
                log.info(
                    "SSP-only startpoint %r in %s changed during fan-out: kept, the newer value fans out next time",
                    entry.key, self._store.uri,
                )
                result.kept.append(entry)

        merged_keys = {startpoint_key(ssp, task) for ssp, task in effective}
        for bad in malformed:
            if bad.key not in merged_keys:  # a malformed SSP+task value replaced by fan-out is gone
                self._warn_once(
                    (bad.key, truncate_json(bad.value)),
                    "skipping malformed startpoint in %s key %r: %s", self._store.uri, bad.key, bad.error,
                )
                result.malformed.append(bad)

        for ssp, task in sorted(effective, key=lambda k: _sort_key(*k)):
            startpoint = effective[(ssp, task)]
            entry = StartpointEntry(startpoint_key(ssp, task), ssp, task, startpoint)
            if self.is_expired(startpoint):
                self._warn_expired(entry.key, startpoint)
                result.expired.append(entry)
            elif ssp not in job_model.tasks.get(task, frozenset()):
                self._warn_once(
                    (entry.key, startpoint.creation_timestamp),
                    "startpoint %s for %s in task %s: that task does not hold this SSP in the job model; kept",
                    startpoint.to_json_str(), ssp, task,
                )
                result.unknown_ssp.append(entry)
            else:
                result.applied[(ssp, task)] = startpoint
        result.expired.sort(key=lambda e: _sort_key(e.ssp, e.task))
        result.unknown_ssp.sort(key=lambda e: _sort_key(e.ssp, e.task))
        return result

    def _merge(self, ssp: SystemStreamPartition, task: TaskName, startpoint: Startpoint) -> Startpoint:
        """Make the SSP+task key hold the newer of its startpoint and ``startpoint``; return what it holds.

        A compare-and-swap built from ``delete_if_equal`` + ``put_if_absent``: if another writer changes the
        key in between, the loop re-reads and compares again, so a newer startpoint is never overwritten.
        """
        key = startpoint_key(ssp, task)
        value = startpoint.to_json()
        for _ in range(_MAX_ATTEMPTS):
            raw = self._store.get(NAMESPACE, key)
            if raw is None:
                if self._store.put_if_absent(NAMESPACE, key, value):
                    return startpoint
                continue
            try:
                current: Startpoint | None = self._parse(key, raw)
            except StartpointFormatError as err:
                log.warning("replacing malformed startpoint %r in %s during fan-out: %s", key, self._store.uri, err)
                current = None
            if current is not None and current.creation_timestamp >= startpoint.creation_timestamp:
                return current  # the existing SSP+task startpoint is as new or newer: it wins
            if self._store.delete_if_equal(NAMESPACE, key, raw) and self._store.put_if_absent(NAMESPACE, key, value):
                return startpoint
        raise errors.metadata_write_contended(
            f"{self._where()} key {key!r}: the startpoint kept changing during fan-out ({_MAX_ATTEMPTS} attempts); "
            "is another process rewriting it in a loop?"
        )

    # ---- helpers -----------------------------------------------------------------------------------------
    def _where(self) -> str:
        return f"metadata store {self._store.uri} (job {self._store.job_name!r}, namespace {NAMESPACE!r})"

    def _parse(self, key: str, raw: Any) -> Startpoint:
        try:
            return Startpoint.from_json(raw)
        except StartpointFormatError as err:
            raise errors.startpoint_invalid(f"{self._where()} key {key!r:.200}: {err.detail}") from None

    def _scan(self) -> tuple[builtins.list[StartpointEntry], builtins.list[MalformedStartpoint]]:
        entries: builtins.list[StartpointEntry] = []
        found = self._store.scan(NAMESPACE)
        # a damaged file, object or item is one more malformed startpoint: it must never hide the valid ones
        malformed = [MalformedStartpoint(bad.location, None, str(bad.error)) for bad in found.damaged]
        for key, raw in found.values.items():
            try:
                ssp, task = parse_startpoint_key(key)
                startpoint = Startpoint.from_json(raw)
            except StartpointFormatError as err:
                malformed.append(MalformedStartpoint(key, raw, err.detail))
                continue
            entries.append(StartpointEntry(key, ssp, task, startpoint, raw))
        entries.sort(key=lambda e: _sort_key(e.ssp, e.task))
        return entries, malformed

    def _warn_expired(self, key: str, startpoint: Startpoint) -> None:
        self._warn_once(
            (key, startpoint.creation_timestamp),
            "ignoring startpoint %s at key %r in %s: created %d ms ago, older than the TTL of %d ms",
            startpoint.to_json_str(), key, self._store.uri, self._clock() - startpoint.creation_timestamp,
            self.ttl_ms,
        )

    def _warn_once(self, token: tuple[str, Any], message: str, *args: Any) -> None:
        """Warn once per manager and (key, value): fan-out runs at every trigger and must not flood the log."""
        if token in self._warned:
            log.debug(message, *args)
        else:
            self._warned.add(token)
            log.warning(message, *args)
