"""How long a test may wait here, now: every deadline in the tests scales with one factor.

A wait in a test is for something (a query's progress, a count of records, a log line, a server answering); how
long that takes depends on how busy the machine is. On a shared 2-core machine at a load of 3 per core a query's
micro-batch takes several times what it takes on a quiet one, and a fixed deadline then fails a test whose
subject did nothing wrong. So every deadline is written for a quiet machine and multiplied by :func:`time_scale`:

- ``SAMZA_TEST_TIME_SCALE`` (a positive number, default 1) sets it for a whole run;
- the devkit raises it by itself while the 1-minute load average exceeds the core count (load / cores, at most
  :data:`MAX_LOAD_SCALE`), read when each wait starts, so a wait begun in a busy minute gets the time that minute
  needs.

A deadline that passes fails naming what was waited for and what was seen (:func:`wait_until`), so a red test
says whether its subject stalled or was merely slow.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

ENV = "SAMZA_TEST_TIME_SCALE"

#: the most the load alone stretches a deadline: past 6x a wait is no longer telling a slow machine from a hang
MAX_LOAD_SCALE = 6.0


def _explicit_scale() -> float:
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return 1.0
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if value <= 0:
        raise ValueError(f"{ENV}={raw!r}: expected a positive number (1 = deadlines as written, 3 = three times "
                         f"as long); unset it to let the devkit follow the machine's load")
    return value


def load_scale() -> float:
    """1 on a quiet machine; the 1-minute load per core (capped at :data:`MAX_LOAD_SCALE`) on a busy one."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this platform: trust the deadlines as written
        return 1.0
    return min(MAX_LOAD_SCALE, max(1.0, load / (os.cpu_count() or 1)))


def time_scale() -> float:
    """The factor every test deadline is multiplied by now: ``SAMZA_TEST_TIME_SCALE`` or the load's, the larger."""
    return max(_explicit_scale(), load_scale())


def scaled(seconds: float) -> float:
    """``seconds`` of a quiet machine, in this machine's seconds now."""
    return seconds * time_scale()


def deadline_after(seconds: float) -> float:
    """A ``time.monotonic()`` deadline ``scaled(seconds)`` from now."""
    return time.monotonic() + scaled(seconds)


def _shown(value: Any, limit: int = 400) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def wait_until(condition: Callable[[], Any], timeout: float, what: str, interval: float = 0.25,
               seen: Callable[[], Any] | None = None) -> Any:
    """``condition()``'s first truthy value, polled every ``interval`` s for ``scaled(timeout)`` s.

    When the deadline passes, AssertionError names ``what``, the time waited (and the scale it was given) and
    what was seen: ``seen()`` if given, else ``condition()``'s last (falsy) answer.
    """
    scale = time_scale()
    deadline = time.monotonic() + timeout * scale
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            break
        time.sleep(interval)
    observed = seen() if seen is not None else value
    raise AssertionError(f"timed out after {timeout * scale:.0f}s ({timeout:g}s x time scale {scale:.1f}) "
                         f"waiting for {what}; last seen: {_shown(observed)}")
