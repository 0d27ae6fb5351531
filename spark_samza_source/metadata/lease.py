"""The job lease: at most one running query per ``job.name`` and metadata store.

Called by both coordinators on the driver: a :class:`JobLease` is acquired with ``put_if_absent`` (namespace
``owner``, key ``driver``) at the driver's first call, before the query writes anything else; renewed (one
``replace_if_equal`` of the record this driver wrote, so the key is never absent in between) by a daemon thread
every ``ttl / 3`` and by the driver calls; taken over (the same compare-and-set) only when expired, when the
newcomer is the same query restarted from its checkpoint (the lease records the query's identity as its offsets
show it), or when the owner ran on this machine and its process is gone. Anyone else fails fast with
:class:`JobLeaseError` naming the job, the (redacted) store, the owner's host and pid and when its lease
expires. A driver whose lease was taken over fails at its next call.

Pure logic over the ``MetadataStore`` interface plus the local process facts it records; clocks are injectable.
Why a lease, and its limits on object stores: docs/architecture.md §3 and docs/guide.md, "One query per job".
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from ..core import errors
from ..core.damage import rule_for_namespace
from ..core.errors import JobLeaseError
from ..core.store import DAMAGE_ERRORS, MetadataStore, is_damage
from ..options.common import (
    DEFAULT_JOB_LEASE_TTL_MS,
    JOB_LEASE_TTL,
    JOB_NAME,
    METADATA_STORE,
    MIN_JOB_LEASE_TTL_MS,
)
from ..options.namespaces import LEASE, LEASE_KEY

__all__ = [
    "JobLease",
    "NAMESPACE",
    "KEY",
    "offset_identity",
    "query_identity",
]

log = logging.getLogger(__name__)

NAMESPACE = LEASE
KEY = LEASE_KEY
LEASE_FORMAT_VERSION = 1
#: identities kept in the lease: enough for every offset a restart may resume from (see ``offset_identity``)
MAX_IDENTITIES = 4
_ACQUIRE_ATTEMPTS = 10
#: how long a newcomer that finds the key absent right after failing to create it waits before trying again: the
#: owner may be releasing it, or (a driver of an earlier release, which renewed by delete_if_equal then
#: put_if_absent) between the two halves of a renewal; renewals and takeovers here are one compare-and-set
_GAP_WAIT_S = 0.2


def offset_identity(offset_json: str) -> str:
    """Identity of a query as one of its offsets shows it: a digest of the offset's canonical JSON.

    A query restarted from its checkpoint resumes from the last offset its previous run planned (or the one
    before it, when that run died before Spark logged its last plan), so the lease keeps the digests of the last
    few offsets the driver saw; nothing secret goes into the store.
    """
    return "offset:" + hashlib.sha256(offset_json.encode("utf-8")).hexdigest()[:32]


def query_identity(query_id: str) -> str:
    """Identity of a query whose offsets carry a per-query id (samza-kinesis)."""
    return f"query:{query_id}"


def _machine_id() -> str:
    """This machine and pid namespace (Linux: boot id + pid namespace), or '' where unknown."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            boot = f.read().strip()
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""
    return f"{boot}/{namespace}" if boot else ""


def _process_gone(pid: Any) -> bool:
    """True only when certain that ``pid`` no longer runs on this machine (a zombie counts as gone)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # PermissionError: it exists, owned by someone else
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state in ("Z", "X")
    except (OSError, IndexError):
        return False


def _iso(ms: Any) -> str:
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    except (TypeError, ValueError, OverflowError, OSError):
        return "an unknown time"


def _valid_record(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    for k in ("acquiredMs", "renewedMs", "ttlMs"):  # epoch / duration ms: a Java long at most, never negative
        v = value.get(k)
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 2**63:
            return False
    query = value.get("query")
    return (isinstance(value.get("owner"), str) and isinstance(query, list)
            and all(isinstance(q, str) for q in query))


class JobLease:
    """The lease of one coordinator (one query's driver) on its job. Thread-safe.

    ``hold(*identities)`` is called at the start of every driver entry point, before anything else touches the
    store: the first call acquires (or fails with :class:`JobLeaseError`), later calls renew when needed and
    raise if the lease was lost. ``identities`` are the query's identities visible in that call
    (:func:`offset_identity`, :func:`query_identity`).
    """

    def __init__(
        self,
        store: MetadataStore,
        *,
        ttl_ms: int = DEFAULT_JOB_LEASE_TTL_MS,
        wall_ms: Callable[[], int] | None = None,
        heartbeat: bool = True,
        sleep: Callable[[float], None] = time.sleep,
        host: str | None = None,
        pid: int | None = None,
        machine: str | None = None,
    ) -> None:
        if not isinstance(ttl_ms, int) or ttl_ms < MIN_JOB_LEASE_TTL_MS:
            raise errors.job_lease_ttl_invalid(JOB_LEASE_TTL.name, MIN_JOB_LEASE_TTL_MS, ttl_ms)
        self.store = store
        self.ttl_ms = ttl_ms
        self.owner_id = uuid.uuid4().hex
        self.host = host if host is not None else socket.gethostname()
        self.pid = pid if pid is not None else os.getpid()
        self.machine = machine if machine is not None else _machine_id()
        self._wall_ms = wall_ms or (lambda: int(time.time() * 1000))
        self._heartbeat_enabled = heartbeat
        self._sleep = sleep
        self._renew_every_ms = max(ttl_ms // 3, 1)
        self._lock = threading.RLock()
        self._held: dict[str, Any] | None = None
        self._lost: str | None = None  # the message, once another driver took the job over
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._parent = os.getppid()

    # ---- public ------------------------------------------------------------------------------------------
    @property
    def held(self) -> dict[str, Any] | None:
        """The lease record as this driver last wrote it (None before the first ``hold``)."""
        with self._lock:
            return None if self._held is None else dict(self._held)

    def hold(self, *identities: str) -> None:
        """Acquire the job (first call) or keep it; raise :class:`JobLeaseError` if another query has it."""
        with self._lock:
            if self._lost is not None:
                raise errors.job_lease_lost(self._lost)
            now = self._wall_ms()
            if self._held is None:
                self._acquire(identities, now)
                self._start_heartbeat()
                return
            fresh = any(i not in self._held["query"] for i in identities)
            if fresh or now - self._held["renewedMs"] >= self._renew_every_ms:
                self._renew_or_give_up(identities, now)

    def renew(self) -> None:
        """Renew now (what the heartbeat does); raises :class:`JobLeaseError` if the lease was lost."""
        with self._lock:
            if self._lost is not None:
                raise errors.job_lease_lost(self._lost)
            if self._held is not None:
                self._renew_or_give_up((), self._wall_ms())

    def release(self) -> bool:
        """Stop renewing and give the job up (if this driver still holds it). True if the lease was removed."""
        self._stop.set()
        with self._lock:
            held, self._held = self._held, None
            if held is None:
                return False
            return self.store.delete_if_equal(NAMESPACE, KEY, held)

    # ---- acquisition -------------------------------------------------------------------------------------
    def _record(self, identities: Iterable[str], now: int, previous: dict[str, Any] | None) -> dict[str, Any]:
        known = list(previous["query"]) if previous else []
        query = list(dict.fromkeys([*identities, *known]))[:MAX_IDENTITIES]
        return {
            "version": LEASE_FORMAT_VERSION,
            "owner": self.owner_id,
            "host": self.host,
            "pid": self.pid,
            "machine": self.machine,
            "query": query,
            "acquiredMs": previous["acquiredMs"] if previous else now,
            "renewedMs": now,
            "ttlMs": self.ttl_ms,
        }

    def _acquire(self, identities: tuple[str, ...], now: int) -> None:
        record = self._record(identities, now, None)
        for _ in range(_ACQUIRE_ATTEMPTS):
            if self.store.put_if_absent(NAMESPACE, KEY, record):
                self._own(record)
                return
            current = self._stored_lease()
            if current is None:
                # Released meanwhile, between an earlier release's renewal halves (give that owner a moment rather
                # than steal the key from a live driver), or a stored JSON null (reads like absent).
                self.store.delete_if_equal(NAMESPACE, KEY, None)
                self._sleep(_GAP_WAIT_S)
                continue
            reason = self._takeover_reason(current, identities, now)
            if reason is None:
                raise errors.job_lease_held(self._conflict_message(current, now))
            if self.store.replace_if_equal(NAMESPACE, KEY, current, record):
                log.warning("job %s: took the job over from %s: %s", self.store.job_name,
                            self._describe_owner(current), reason)
                self._own(record)
                return
        raise errors.job_lease_held(
            f"{JOB_NAME.name} '{self.store.job_name}' in metadata store '{self.store.uri}': could not acquire the "
            f"job's lease after {_ACQUIRE_ATTEMPTS} attempts, other drivers keep changing it. Is another query with "
            f"the same {JOB_NAME.name} starting and stopping in a loop? Give each query its own {JOB_NAME.name}."
        )

    def _stored_lease(self) -> Any:
        """The stored lease; for one the store cannot read, the damaged-record rule's verdict for leases: fail,
        naming it and the repair (guessing could let two queries of one job.name run at once)."""
        try:
            return self.store.get(NAMESPACE, KEY)
        except DAMAGE_ERRORS as exc:
            if not is_damage(exc):
                raise
            raise errors.metadata_value_invalid(
                f"damaged job lease (kind: job lease, namespace {NAMESPACE!r}, key {KEY!r}) of "
                f"{JOB_NAME.name} '{self.store.job_name}' in metadata store {self.store.uri}: {exc}. "
                f"Repair: {rule_for_namespace(NAMESPACE).repair}"
            ) from None

    def _own(self, record: dict[str, Any]) -> None:
        self._held = record
        log.info("job %s: this driver (host %s, pid %d) owns the job in %s (lease ttl %d ms)",
                 self.store.job_name, self.host, self.pid, self.store.uri, self.ttl_ms)

    def _takeover_reason(self, current: Any, identities: tuple[str, ...], now: int) -> str | None:
        """Why this driver may replace ``current``, or None if it must not."""
        if not _valid_record(current):
            return "the stored lease is unreadable"
        if current["owner"] == self.owner_id:
            return "it is this driver's own lease"
        shared = set(identities) & set(current["query"])
        if shared:
            return "it is the same query, restarted from its checkpoint"
        expires = current["renewedMs"] + current["ttlMs"]
        if now >= expires:
            return f"its lease expired at {_iso(expires)}"
        if (self.machine and current.get("machine") == self.machine and current.get("host") == self.host
                and current.get("pid") != self.pid and _process_gone(current.get("pid"))):
            return f"its driver process {current.get('pid')} on this machine is gone"
        return None

    # ---- renewal -----------------------------------------------------------------------------------------
    def _renew_or_give_up(self, identities: Iterable[str], now: int) -> None:
        """Renew; when the store fails to answer and the lease has expired by this driver's own clock (the store
        was unreachable for longer than the TTL), the lease counts as lost for good: another driver may have
        taken the job over in the meantime, so this one must not carry on as if it still owned it, even if the
        store answers again later. A failure within the TTL propagates as it is (the heartbeat retries)."""
        try:
            self._renew(identities, now)
        except JobLeaseError:
            raise
        except Exception as err:
            assert self._held is not None
            expired_ms = now - (self._held["renewedMs"] + self.ttl_ms)
            if expired_ms < 0:
                raise
            self._lost = self._unrenewable_message(now, err)
            self._stop.set()
            raise errors.job_lease_lost(self._lost) from err

    def _renew(self, identities: Iterable[str], now: int) -> None:
        identities = tuple(identities)
        current: Any = None
        for _ in range(3):
            held = self._held
            assert held is not None
            new = self._record(identities, now, held)
            if self.store.replace_if_equal(NAMESPACE, KEY, held, new):
                self._held = new
                return
            current = self._stored_lease()
            if current is None:
                # Removed by someone (an operator, or a contender that gave up): nobody holds it, take it back.
                if self.store.put_if_absent(NAMESPACE, KEY, new):
                    log.warning("job %s: the driver lease had been removed from %s; this driver took it again",
                                self.store.job_name, self.store.uri)
                    self._held = new
                    return
                current = self._stored_lease()
            if not (isinstance(current, dict) and current.get("owner") == self.owner_id):
                break
            self._held = current  # our own write (e.g. a renewal whose reply was lost): adopt it, try again
        self._lost = self._lost_message(current)
        self._stop.set()
        raise errors.job_lease_lost(self._lost)

    def _start_heartbeat(self) -> None:
        if not self._heartbeat_enabled or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._beat, name=f"samza-lease-{self.store.job_name}", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        interval_s = self._renew_every_ms / 1000
        while not self._stop.wait(interval_s):
            if os.getppid() != self._parent:
                log.warning("job %s: the driver process that started this one is gone; the job's lease is no "
                            "longer renewed", self.store.job_name)
                return
            try:
                self.renew()
            except JobLeaseError as err:  # taken over, or the store unreachable for longer than the TTL
                log.error("%s", err)
                return
            except Exception as err:  # noqa: BLE001 - a store hiccup: the next beat (or driver call) retries
                log.warning("job %s: could not renew the driver lease in %s (retrying in %.1f s): %s",
                            self.store.job_name, self.store.uri, interval_s, err)

    # ---- messages ----------------------------------------------------------------------------------------
    @staticmethod
    def _describe_owner(current: Any) -> str:
        if not isinstance(current, dict):
            return "an unknown driver"
        return (f"the driver on host {current.get('host', '?')!s:.100}, pid {current.get('pid', '?')!s:.20} "
                f"(owner id {current.get('owner', '?')!s:.40})")

    def _conflict_message(self, current: dict[str, Any], now: int) -> str:
        expires = current["renewedMs"] + current["ttlMs"]
        ago = max(0, now - current["renewedMs"]) / 1000
        return (
            f"{JOB_NAME.name} '{self.store.job_name}' is already in use in metadata store '{self.store.uri}': "
            f"another query owns it, {self._describe_owner(current)}, since {_iso(current['acquiredMs'])}. Its "
            f"lease was renewed {ago:.1f} s ago and expires at {_iso(expires)} unless renewed again "
            f"(TTL {current['ttlMs'] / 1000:g} s). Two queries with the same {JOB_NAME.name} and "
            f"{METADATA_STORE.name} would share startpoints, the job model and the checkpoint mirrors, so this query "
            f"does not start. To fix: give this query its own {JOB_NAME.name}; or stop the other query (a stopped "
            f"or crashed driver's lease expires {JOB_LEASE_TTL.name} after its last renewal, and a restart of "
            "the same query from its checkpoint is let in at once); or, if the other query is already gone, wait "
            "until the lease expires."
        )

    def _unrenewable_message(self, now: int, err: BaseException) -> str:
        assert self._held is not None
        silent_s = max(0, now - self._held["renewedMs"]) / 1000
        return (
            f"{JOB_NAME.name} '{self.store.job_name}' in metadata store '{self.store.uri}': this query's driver "
            f"(host {self.host}, pid {self.pid}) could not renew its lease on the job for {silent_s:.1f} s, longer "
            f"than {JOB_LEASE_TTL.name} = {self.ttl_ms / 1000:g} s: the store did not answer "
            f"({str(err)[:500]}). Another query may have taken the job over since, so this query stops rather "
            "than run on without its lease. "
            "Check that the metadata store is reachable, then restart the query from its checkpoint (the same "
            f"query takes its lease back at once); raise {JOB_LEASE_TTL.name} to ride out longer store outages."
        )

    def _lost_message(self, current: Any) -> str:
        since = _iso(current.get("acquiredMs")) if isinstance(current, dict) else "an unknown time"
        return (
            f"{JOB_NAME.name} '{self.store.job_name}' in metadata store '{self.store.uri}': this query's driver "
            f"(host {self.host}, pid {self.pid}) lost the job to another query, {self._describe_owner(current)}, which "
            f"took it over at {since} (this driver had not renewed its lease within {JOB_LEASE_TTL.name} = "
            f"{self.ttl_ms / 1000:g} s, or the same query was started a second time). This query stops so that two "
            "queries never share the job's startpoints and job model. Stop one of them; if you need both, give "
            f"each its own {JOB_NAME.name}."
        )
