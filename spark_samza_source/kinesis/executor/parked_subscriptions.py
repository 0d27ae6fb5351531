"""Enhanced fan-out subscriptions kept open between reads of a shard in one executor process ("parked").

AWS refuses a ``SubscribeToShard`` by a consumer to a shard within 5 seconds of its previous successful call
(``ResourceInUseException``). A read that subscribed anew for every micro-batch therefore waited ~5 s per batch of
every shard. A fan-out read that ends at a position it can be resumed from instead leaves its subscription here,
still open (its pump thread goes on filling a small bounded queue; TCP backpressure holds the rest), and the next
read of the same shard by the same consumer in this process takes it and goes on from the very same event stream:
no call, no 5-second rule. Spark reuses Python workers across tasks (``spark.python.worker.reuse``, on by
default), so the next batch's read of a shard often runs in the same process; when it does not, the subscription
parked elsewhere is taken over (AWS ends it) or expires, and the read subscribes as before.

The registry is per process, keyed by (Kinesis client, consumer ARN, shard id) -- a subscription belongs to the
endpoint and credentials of the client that opened it; clients are cached per process and settings, so a query's
reads share one -- and bounded: a subscription not taken within
:data:`PARKED_TTL_S` is closed, and at most :data:`MAX_PARKED` are kept (the oldest is closed first). Expired ones
are reaped whenever a read parks or takes one, and by a daemon thread that runs while anything is parked (checking
every :data:`REAP_INTERVAL_S` at most): reads alone cannot bound the wait, because after a query stops in a session
that lives on, or when Spark sends a shard's reads to other Python workers for good, no read comes to this
process again, and its parked subscriptions would hold their connections, pump threads and queued events for as
long as the Python worker lives (a pump whose queue is full waits for a reader even after AWS ends the stream).
Taking removes the entry, so two readers never share an event stream. Executor side only: it holds no driver state
and imports nothing but the pure position type.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..positions import ShardPosition

__all__ = ["MAX_PARKED", "PARKED", "PARKED_TTL_S", "REAP_INTERVAL_S", "ParkedSubscription", "ParkedSubscriptions"]

log = logging.getLogger(__name__)

#: seconds a parked subscription waits for the next read of its shard. Long enough for the next micro-batch of a
#: query triggered up to every ~minute (the next read comes after the trigger interval plus the batch's planning
#: and commit); longer buys nothing: AWS's 5-second rule counts from the last *call*, so a read that comes later
#: than this subscribes at once anyway, while a parked subscription holds a connection and a thread.
PARKED_TTL_S = 60.0
#: parked subscriptions one process keeps: each holds a connection, a pump thread and up to a few events (its queue
#: of 4 and the kept one; an event carries at most what a shard pushes in about a second, 2 MB on AWS), so 64 bound
#: a worker's parked memory to some hundreds of MB in the worst case, while covering the shards a worker reads in
#: turn (a task reads at most 16 at once). Beyond it the oldest is closed, which costs only a new subscription
#: when its shard is read again.
MAX_PARKED = 64
#: how often, at most, the reaper thread looks for expired subscriptions while some are parked (it sleeps until the
#: oldest expires, but never longer than this, so a TTL lowered at run time takes effect soon)
REAP_INTERVAL_S = 1.0


@dataclass
class ParkedSubscription:
    """An open subscription left by a read that ended at ``end``.

    ``events`` is the subscription's event source (``close()`` ends it). ``kept`` is the event the read was
    consuming when it stopped, holding only the records it did not consume whole (a read can stop inside an
    event: at ``maxRecordsPerShard``, at a recorded end, at the ``Trigger.AvailableNow`` cut-off, inside a KPL
    aggregate), or None; the next read replays them before the queued events. ``expect`` is the reader's check of
    the first record still pending when the read ended (nothing read since the subscription started), None
    otherwise. ``what`` names the consumer, stream and shard for the log."""

    events: Any
    end: ShardPosition
    kept: dict[str, Any] | None
    expect: tuple[int, int, bool] | None
    what: str
    parked_at: float = field(default_factory=time.monotonic)


class ParkedSubscriptions:
    """The parked subscriptions of this process (see the module documentation)."""

    def __init__(self, ttl_s: float = PARKED_TTL_S, max_parked: int = MAX_PARKED,
                 clock: Callable[[], float] = time.monotonic, background_reaper: bool = True) -> None:
        """``clock`` and ``background_reaper=False``: for tests that drive expiry with a clock of their own, through
        ``park`` and ``take`` only."""
        self.ttl_s = ttl_s
        self.max_parked = max_parked
        self.clock = clock
        self.background_reaper = background_reaper
        self._lock = threading.Lock()
        self._parked: dict[tuple, ParkedSubscription] = {}
        self._reaper: threading.Thread | None = None

    def park(self, key: tuple, parked: ParkedSubscription) -> None:
        """Keep ``parked`` for the next read of ``key`` = (client, consumer ARN, shard id)."""
        parked.parked_at = self.clock()
        with self._lock:
            dropped = self._expired_locked()
            earlier = self._parked.pop(key, None)
            if earlier is not None:
                dropped.append((earlier, "another read of the shard parked a newer one"))
            while self._parked and len(self._parked) >= self.max_parked:
                oldest = next(iter(self._parked))
                dropped.append((self._parked.pop(oldest), f"more than {self.max_parked} parked in this process"))
            if self.max_parked > 0:
                self._parked[key] = parked
                self._start_reaper_locked()
            else:
                dropped.append((parked, "parking is off (max_parked 0)"))
        _close(dropped)
        log.debug("%s: subscription parked at %s for the next read of the shard", parked.what, parked.end)

    def take(self, key: tuple) -> ParkedSubscription | None:
        """The subscription parked for ``key``, removed from the registry; None when there is none (or it expired)."""
        with self._lock:
            dropped = self._expired_locked()
            parked = self._parked.pop(key, None)
        _close(dropped)
        return parked

    def close_all(self) -> int:
        """Close every parked subscription; how many there were."""
        with self._lock:
            dropped = [(p, "closed on request") for p in self._parked.values()]
            self._parked.clear()
        _close(dropped)
        return len(dropped)

    def __len__(self) -> int:
        with self._lock:
            return len(self._parked)

    def _start_reaper_locked(self) -> None:
        """A reaper thread while anything is parked (one at a time; a forked child has none: threads do not survive
        a fork)."""
        if not self.background_reaper or (self._reaper is not None and self._reaper.is_alive()):
            return
        self._reaper = threading.Thread(target=self._reap_until_empty, name="parked-subscriptions-reaper",
                                        daemon=True)
        self._reaper.start()

    def _reap_until_empty(self) -> None:
        """Close expired subscriptions as they expire, until none is parked."""
        while True:
            with self._lock:
                dropped = self._expired_locked()
                if not self._parked:
                    self._reaper = None  # under the lock: a park from now on starts a new reaper
                    wait = None
                else:
                    oldest = min(p.parked_at for p in self._parked.values())
                    wait = min(max(oldest + self.ttl_s - self.clock(), 0.0), REAP_INTERVAL_S)
            _close(dropped)
            if wait is None:
                return
            time.sleep(wait + 0.01)

    def _expired_locked(self) -> list[tuple[ParkedSubscription, str]]:
        now = self.clock()
        gone = [key for key, p in self._parked.items() if now - p.parked_at >= self.ttl_s]
        return [(self._parked.pop(key), f"not taken within {self.ttl_s:g} s") for key in gone]


def _close(dropped: list[tuple[ParkedSubscription, str]]) -> None:
    """Close dropped subscriptions outside the registry's lock (closing a socket may take a moment)."""
    for parked, why in dropped:
        log.info("%s: parked subscription closed (%s); the next read of the shard subscribes anew", parked.what, why)
        parked.events.close()


#: the registry of this process, shared by every fan-out read in it
PARKED = ParkedSubscriptions()
