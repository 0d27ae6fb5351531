"""Rules for the librdkafka configuration that the driver's admin and the executors' consumers both follow.

Apart from ``admin.py`` so that executor code (the consumer cache) never imports a driver module
(docs/architecture.md §2).
"""

from __future__ import annotations

from collections.abc import Mapping

from .errors import KafkaSourceError

__all__ = ["isolation_level_of"]


def isolation_level_of(client_conf: Mapping[str, str]) -> str:
    """The ``isolation.level`` both admin and readers use: the user's, else ``read_uncommitted`` (Spark's)."""
    level = client_conf.get("isolation.level", "read_uncommitted").strip().lower()
    if level not in ("read_uncommitted", "read_committed"):
        raise KafkaSourceError(
            f"option 'kafka.isolation.level' must be read_uncommitted or read_committed, got {level!r}"
        )
    return level
