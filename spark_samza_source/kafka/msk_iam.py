"""Amazon MSK IAM authentication: a token provider for SASL/OAUTHBEARER (optional extra ``msk-iam``).

Amazon MSK's IAM access control takes, as the OAUTHBEARER token, a SigV4-presigned ``kafka-cluster:Connect``
request made with the caller's AWS credentials; AWS's ``aws-msk-iam-sasl-signer-python`` builds it. Name this
module's :func:`token_provider` in the option ``kafka.sasl.oauthbearer.tokenProvider``; it is then librdkafka's
``oauth_cb`` on the driver and on every executor, each signing with the AWS credentials it finds (the default
chain: environment, instance or container role...)::

    .option("kafka.security.protocol", "SASL_SSL")
    .option("kafka.sasl.mechanism", "OAUTHBEARER")
    .option("kafka.sasl.oauthbearer.tokenProvider", "spark_samza_source.kafka.msk_iam.token_provider")
    .option("kafka.sasl.oauthbearer.config", "aws_region=eu-west-1")

``kafka.sasl.oauthbearer.config`` holds space-separated ``key=value`` pairs: ``aws_region`` (else the
``AWS_REGION`` / ``AWS_DEFAULT_REGION`` environment variable), and optionally ``aws_profile`` or
``aws_role_arn`` (with ``aws_role_session_name``) to sign with a named profile or an assumed role.

Without the extra installed, importing this module fails naming the extra, so a query naming it fails at its
start (``load_token_provider`` in ``client_conf.py`` reports the import error). A missing region is found before a
client is created (``check_config``, which ``client_conf.with_callbacks`` calls): librdkafka drops an exception
raised in ``oauth_cb``, and the client would then fail with "OAuth token not set within 10 seconds timeout", which
says nothing of the region.
"""

from __future__ import annotations

import os

from ..core.errors import extra_install_hint
from . import errors

try:
    from aws_msk_iam_sasl_signer import MSKAuthTokenProvider
except ImportError as err:  # the optional extra is not installed
    raise ImportError("Amazon MSK IAM authentication needs AWS's aws-msk-iam-sasl-signer-python on the driver and "
                      f"every executor: install {extra_install_hint('msk-iam')}") from err

__all__ = ["token_provider"]

_CONFIG_OPTION = "kafka.sasl.oauthbearer.config"


def _settings(config: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in (config or "").split() if "=" in item)


def _region(settings: dict[str, str]) -> str:
    region = settings.get("aws_region") or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if not region:
        raise errors.msk_iam_region_missing(config_option=_CONFIG_OPTION)
    return region


class _TokenProvider:
    """The token provider: a callable, with the check a client's settings get before the client exists."""

    def __call__(self, config: str) -> tuple[str, float]:
        """``(token, expiry in epoch seconds)`` for librdkafka's oauth_cb; ``config``: see the module documentation."""
        settings = _settings(config)
        region = _region(settings)
        if settings.get("aws_role_arn"):
            token, expiry_ms = MSKAuthTokenProvider.generate_auth_token_from_role_arn(
                region, settings["aws_role_arn"], settings.get("aws_role_session_name") or "spark-samza-source")
        elif settings.get("aws_profile"):
            token, expiry_ms = MSKAuthTokenProvider.generate_auth_token_from_profile(region, settings["aws_profile"])
        else:
            token, expiry_ms = MSKAuthTokenProvider.generate_auth_token(region)
        return token, expiry_ms / 1000.0

    @staticmethod
    def check_config(config: str) -> None:
        """Raise the error naming the option when ``config`` and the environment give no region."""
        _region(_settings(config))


token_provider = _TokenProvider()
