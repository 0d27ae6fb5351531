"""An OAUTHBEARER token provider for the development broker (test and demo infrastructure only).

Use it as the samza-kafka option ``kafka.sasl.oauthbearer.tokenProvider`` =
``samza_devkit.oauth.token_provider`` against a ``KafkaDevBroker(sasl_oauthbearer_secret=DEV_OAUTH_SECRET)``.
librdkafka calls it (confluent-kafka's ``oauth_cb``) with the ``kafka.sasl.oauthbearer.config`` string, read here
as space-separated ``key=value`` pairs:

* ``principal=NAME``: the token's subject (default ``samza``);
* ``lifetime_s=SECONDS``: how long the token is valid (default 3600);
* ``signing_key=KEY``: sign with another key (a test of a token the broker must refuse);
* ``record_dir=DIR``: write one file per call, named after the calling process and holding the token, so a test
  can see that the driver and the executors (other processes) each asked for a token, and which tokens to look
  for where they must never appear.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from .kafka_broker.sasl import make_token

__all__ = ["DEV_OAUTH_SECRET", "token_provider"]

DEV_OAUTH_SECRET = "samza-devkit-oauthbearer-signing-key"


def token_provider(config: str) -> tuple[str, float, str, dict[str, str]]:
    params = dict(item.split("=", 1) for item in (config or "").split() if "=" in item)
    principal = params.get("principal", "samza")
    token, expiry = make_token(params.get("signing_key", DEV_OAUTH_SECRET), principal,
                               float(params.get("lifetime_s", "3600")))
    record_dir = params.get("record_dir")
    if record_dir:
        Path(record_dir).mkdir(parents=True, exist_ok=True)
        (Path(record_dir) / f"{os.getpid()}-{uuid.uuid4().hex[:8]}").write_text(token)
    return token, expiry, principal, {}
