"""The optional ``msk-iam`` extra: Amazon MSK IAM tokens through AWS's signer, as an OAUTHBEARER token provider.

Signing is local (a SigV4-presigned URL), so a real token is made here with fake credentials; the broker side is
Amazon's. Without the extra, naming the provider fails the query's start naming the extra to install.
"""

from __future__ import annotations

import base64
import importlib
import sys
import time
from urllib.parse import parse_qs, urlparse

import pytest

from spark_samza_source.core.errors import ConfigError
from spark_samza_source.kafka.options import KafkaSourceOptions

PROVIDER = "spark_samza_source.kafka.msk_iam.token_provider"
BASE = {"kafka.bootstrap.servers": "b-1.msk.example:9098", "subscribe": "orders", "job.name": "orders-job",
        "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "OAUTHBEARER",
        "kafka.sasl.oauthbearer.tokenprovider": PROVIDER, "kafka.sasl.oauthbearer.config": "aws_region=eu-west-1"}


@pytest.fixture
def fake_aws(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDMSKTEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "msk-test-secret")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def test_provider_signs_an_msk_connect_token_for_the_configured_region(fake_aws):
    from spark_samza_source.kafka.msk_iam import token_provider

    token, expiry = token_provider("aws_region=eu-west-1")
    url = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    parsed = urlparse(url)
    query = parse_qs(parsed.query)
    assert parsed.netloc == "kafka.eu-west-1.amazonaws.com"
    assert query["Action"] == ["kafka-cluster:Connect"] and "X-Amz-Signature" in query
    assert "AKIDMSKTEST" in query["X-Amz-Credential"][0]
    assert time.time() < expiry < time.time() + 24 * 3600  # seconds, as librdkafka's oauth_cb wants


def test_provider_without_a_region_says_how_to_give_one(fake_aws, monkeypatch):
    from spark_samza_source.kafka.msk_iam import token_provider

    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    with pytest.raises(ConfigError, match=r"^\[SAMZA_INVALID_OPTION\] Amazon MSK IAM: no AWS region; set "
                                          r"kafka\.sasl\.oauthbearer\.config to 'aws_region=<region>'"):
        token_provider("")


def test_a_missing_region_fails_before_the_client_exists(fake_aws, monkeypatch):
    # librdkafka drops an exception raised in oauth_cb: the client would fail 10 s later with "OAuth token not set
    # within 10 seconds timeout", naming no region. So the region is checked while the client's settings are made.
    from spark_samza_source.kafka.client_conf import with_callbacks

    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    conf = {**KafkaSourceOptions.parse(BASE).client_conf, "sasl.oauthbearer.config": "aws_profile=msk"}
    with pytest.raises(ConfigError, match="no AWS region") as err:
        with_callbacks(conf)
    assert err.value.condition == "SAMZA_INVALID_OPTION"
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    assert callable(with_callbacks(conf)["oauth_cb"])


def test_options_accept_the_provider_by_dotted_path():
    opts = KafkaSourceOptions.parse(BASE)
    assert opts.client_conf["sasl.oauthbearer.tokenprovider"] == PROVIDER


def test_without_the_extra_the_query_start_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "aws_msk_iam_sasl_signer", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "spark_samza_source.kafka.msk_iam", raising=False)
    with pytest.raises(ImportError, match=r"spark-samza-source\[msk-iam\]"):
        importlib.import_module("spark_samza_source.kafka.msk_iam")
    with pytest.raises(ConfigError) as err:
        KafkaSourceOptions.parse(BASE)
    assert "'kafka.sasl.oauthbearer.tokenProvider'" in str(err.value)
    assert "spark-samza-source[msk-iam]" in str(err.value)
