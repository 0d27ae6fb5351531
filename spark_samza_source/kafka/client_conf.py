"""Rules for the librdkafka configuration that the driver's admin and the executors' consumers both follow.

Apart from ``admin.py`` so that executor code (the consumer cache) never imports a driver module
(docs/architecture.md §2).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from ..core.errors import ConfigError
from .errors import KafkaSourceError
from .options import OAUTHBEARER_TOKEN_PROVIDER_OPTION

__all__ = ["TOKEN_PROVIDER_KEY", "isolation_level_of", "load_token_provider", "with_callbacks"]


def isolation_level_of(client_conf: Mapping[str, str]) -> str:
    """The ``isolation.level`` both admin and readers use: the user's, else ``read_uncommitted`` (Spark's)."""
    level = client_conf.get("isolation.level", "read_uncommitted").strip().lower()
    if level not in ("read_uncommitted", "read_committed"):
        raise KafkaSourceError(
            f"option 'kafka.isolation.level' must be read_uncommitted or read_committed, got {level!r}"
        )
    return level


# ---- OAUTHBEARER token provider (issue #14) ---------------------------------------------------------------------
# Kept in the client configuration (so it reaches executors with it) under the option's name without 'kafka.',
# lower-cased as Spark hands options over; replaced by librdkafka's oauth_cb wherever a client is created.
TOKEN_PROVIDER_KEY = OAUTHBEARER_TOKEN_PROVIDER_OPTION[len("kafka."):].lower()


def load_token_provider(path: str) -> Callable[[str], Any]:
    """The callable named by the dotted path ``package.module.function``; a clear error when it is not one.

    It is called as confluent-kafka's ``oauth_cb``: with librdkafka's ``sasl.oauthbearer.config`` string, and
    returns ``(token, expiry_epoch_seconds)`` or ``(token, expiry, principal, extensions)``."""
    module_name, _, attr = path.strip().rpartition(".")
    if not module_name or not attr:
        raise ConfigError(f"option '{OAUTHBEARER_TOKEN_PROVIDER_OPTION}' must be a dotted path "
                          f"'package.module.function', got {path!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ConfigError(f"option '{OAUTHBEARER_TOKEN_PROVIDER_OPTION}': cannot import module {module_name!r} "
                          f"({err}); install it on the driver and every executor (e.g. --py-files)") from None
    provider = getattr(module, attr, None)
    if not callable(provider):
        raise ConfigError(f"option '{OAUTHBEARER_TOKEN_PROVIDER_OPTION}': {module_name!r} has no callable "
                          f"{attr!r}; name a function taking the sasl.oauthbearer.config string")
    return provider


def with_callbacks(conf: Mapping[str, Any]) -> dict[str, Any]:
    """``conf`` ready for a confluent-kafka client: the token provider's path replaced by ``oauth_cb``."""
    out = dict(conf)
    path = out.pop(TOKEN_PROVIDER_KEY, None)
    if path is not None:
        out["oauth_cb"] = load_token_provider(str(path))
    return out
