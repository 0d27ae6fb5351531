"""Rules for the librdkafka configuration that the driver's admin and the executors' consumers both follow.

Apart from ``admin.py`` so that executor code (the consumer cache) never imports a driver module
(docs/architecture.md §2).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from . import errors

__all__ = ["LOOKUP_GROUP_ID", "TOKEN_PROVIDER_KEY", "TOKEN_PROVIDER_SETTING", "isolation_level_of",
           "load_token_provider", "with_callbacks"]

#: the ``group.id`` of the consumers that only look offsets up or read assigned partitions (the executors' readers,
#: the driver's offset lookups) when the user set none: librdkafka wants one even for ``assign()``, and nothing is
#: ever committed with it
LOOKUP_GROUP_ID = "samza-source-reader"


def isolation_level_of(client_conf: Mapping[str, str]) -> str:
    """The ``isolation.level`` both admin and readers use: the user's, else ``read_uncommitted`` (Spark's)."""
    level = client_conf.get("isolation.level", "read_uncommitted").strip().lower()
    if level not in ("read_uncommitted", "read_committed"):
        raise errors.isolation_level_invalid(level)
    return level


# ---- librdkafka's own names: the ``kafka.*`` options are checked against them at option parsing ---------------

#: confluent-kafka's Python-level settings: they take Python callables or dicts, which a Spark option (a string)
#: cannot carry
PYTHON_CALLBACK_SETTINGS = ("error_cb", "throttle_cb", "stats_cb", "oauth_cb", "logger", "on_commit", "on_delivery",
                            "default.topic.config")
#: never probed for suggestions: setting it loads shared libraries
_NOT_PROBED = ("plugin.library.paths",)
_SENTINEL = "samza.source.check.sentinel"
_NO_SUCH = "No such configuration property"
_LETTERS = "abcdefghijklmnopqrstuvwxyz."


def librdkafka_problem(client_conf: Mapping[str, str]) -> tuple[str, str] | None:
    """The first property of ``client_conf`` librdkafka refuses, as (property, librdkafka's reason), or None.

    librdkafka itself is asked, so the check follows the installed version: each property is set on a consumer
    configuration, in order, followed by a property that does not exist, so the client is never created (nothing
    connects) and the first refused property is the one the error names. A property's value is checked too where
    librdkafka checks it when it is set (numbers, enumerations)."""
    reason = _refusal(client_conf)
    if reason is None:
        return None
    for name in client_conf:
        if f'"{name}"' in reason:
            return name, reason
    for name, value in client_conf.items():  # the reason does not name it (Java JAAS, trust stores): one by one
        alone = _refusal({name: value})
        if alone is not None:
            return name, alone
    return next(iter(client_conf), ""), reason


def _refusal(client_conf: Mapping[str, str]) -> str | None:
    """librdkafka's (or confluent-kafka's) reason for refusing ``client_conf``, or None if it takes it all."""
    from confluent_kafka import Consumer, KafkaException

    conf: dict[str, str] = {"group.id": "samza-source-option-check"}
    conf.update(client_conf)
    conf[_SENTINEL] = "1"
    try:
        Consumer(conf)
    except KafkaException as err:
        text = err.args[0].str() if err.args and hasattr(err.args[0], "str") else str(err)
        return None if f'"{_SENTINEL}"' in text else text
    except (TypeError, ValueError, AttributeError) as err:  # a Python-level setting given a string
        return str(err)
    return None  # not reached: the sentinel always fails


#: SASL mechanisms librdkafka supports only when built with a library it may lack: Kerberos needs libsasl2 (or
#: Windows' SSPI), which the librdkafka in confluent-kafka's Linux wheels is built without
_OPTIONAL_SASL_MECHANISMS = frozenset({"GSSAPI"})


def missing_sasl_provider(client_conf: Mapping[str, str]) -> str | None:
    """librdkafka's reason when this build cannot use the ``sasl.mechanism`` asked for, else None. Only the
    mechanisms a build may lack are probed: a client is created with that mechanism and no broker to connect to
    (the provider is looked for when the client is made), then closed; Kerberos' ticket refresh is off in it, so
    a build that has the provider runs no ``kinit`` for the probe."""
    mechanism = str(client_conf.get("sasl.mechanism", client_conf.get("sasl.mechanisms", ""))).strip().upper()
    if mechanism not in _OPTIONAL_SASL_MECHANISMS:
        return None
    from confluent_kafka import Consumer, KafkaException

    try:
        Consumer({"group.id": "samza-source-option-check", "security.protocol": "SASL_PLAINTEXT",
                  "sasl.mechanism": mechanism, "sasl.kerberos.min.time.before.relogin": "0"}).close()
    except KafkaException as err:
        text = err.args[0].str() if err.args and hasattr(err.args[0], "str") else str(err)
        return text if "No provider for SASL mechanism" in text else None
    return None


def librdkafka_knows(name: str) -> bool:
    """Whether librdkafka has a property ``name`` (any answer but "No such configuration property" means yes)."""
    if name in _NOT_PROBED or name in PYTHON_CALLBACK_SETTINGS:
        return False
    from confluent_kafka import Consumer, KafkaException

    try:
        Consumer({"group.id": "samza-source-option-check", name: "", _SENTINEL: "1"})
    except KafkaException as err:
        text = err.args[0].str() if err.args and hasattr(err.args[0], "str") else str(err)
        return not (_NO_SUCH in text and f'"{name}"' in text)
    except Exception:  # noqa: BLE001 - any other refusal is about the value, so the name exists
        return True
    return True


def librdkafka_near_names(name: str) -> list[str]:
    """librdkafka properties one edit away from ``name`` (a letter or dot missing, extra, wrong or two swapped):
    the suggestions for a misspelt ``kafka.*`` option, found by asking librdkafka, closest first."""
    variants: list[str] = []
    for i in range(len(name) + 1):
        for letter in _LETTERS:
            variants.append(name[:i] + letter + name[i:])
            if i < len(name):
                variants.append(name[:i] + letter + name[i + 1:])
        if i < len(name):
            variants.append(name[:i] + name[i + 1:])
        if i < len(name) - 1:
            variants.append(name[:i] + name[i + 1] + name[i] + name[i + 2:])
    seen: dict[str, None] = {}
    for candidate in variants:
        if candidate != name and candidate not in seen and candidate.strip(".") == candidate:
            seen[candidate] = None
    return [candidate for candidate in seen if librdkafka_knows(candidate)][:3]


# ---- OAUTHBEARER token provider: a user's function that fetches tokens for brokers using SASL/OAUTHBEARER -------
# Kept in the client configuration (so it reaches executors with it) under the option's name without 'kafka.',
# lower-cased as Spark hands options over; replaced by librdkafka's oauth_cb wherever a client is created.
# The option (``kafka.options.OAUTHBEARER_TOKEN_PROVIDER``) is named after this setting.
TOKEN_PROVIDER_SETTING = "sasl.oauthbearer.tokenProvider"
TOKEN_PROVIDER_KEY = TOKEN_PROVIDER_SETTING.lower()
_TOKEN_PROVIDER_OPTION = f"kafka.{TOKEN_PROVIDER_SETTING}"


def load_token_provider(path: str) -> Callable[[str], Any]:
    """The callable named by the dotted path ``package.module.function``; a clear error when it is not one.

    It is called as confluent-kafka's ``oauth_cb``: with librdkafka's ``sasl.oauthbearer.config`` string, and
    returns ``(token, expiry_epoch_seconds)`` or ``(token, expiry, principal, extensions)``."""
    module_name, _, attr = path.strip().rpartition(".")
    if not module_name or not attr:
        raise errors.token_provider_not_dotted(path, option=_TOKEN_PROVIDER_OPTION)
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise errors.token_provider_not_importable(module_name, err, option=_TOKEN_PROVIDER_OPTION) from None
    provider = getattr(module, attr, None)
    if not callable(provider):
        raise errors.token_provider_not_callable(module_name, attr, option=_TOKEN_PROVIDER_OPTION)
    return provider


def with_callbacks(conf: Mapping[str, Any]) -> dict[str, Any]:
    """``conf`` ready for a confluent-kafka client: the token provider's path replaced by ``oauth_cb``.

    A provider with a ``check_config`` (``msk_iam.token_provider``) checks ``sasl.oauthbearer.config`` here,
    before the client exists: librdkafka drops an exception raised in ``oauth_cb``, and the client then fails with
    "OAuth token not set within 10 seconds timeout", which never says what was wrong."""
    out = dict(conf)
    path = out.pop(TOKEN_PROVIDER_KEY, None)
    if path is not None:
        provider = load_token_provider(str(path))
        check = getattr(provider, "check_config", None)
        if callable(check):
            check(str(out.get("sasl.oauthbearer.config", "")))
        out["oauth_cb"] = provider
    return out
