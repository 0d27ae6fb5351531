"""redact_uri / scrub_secrets: credentials in store URIs never reach store.uri, errors or logs."""

from __future__ import annotations

import string

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from spark_samza_source.metadata import redact_uri, scrub_secrets


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("s3://AKIAEXAMPLE:wJalr/K7MDENG+bPxRfiCY@bucket/prefix", "s3://***@bucket/prefix"),
        ("s3://AKIA:se%2Fcret@bucket/p?region=eu-west-1", "s3://***@bucket/p?region=eu-west-1"),
        ("s3://AKIA:p@ss@bucket/p", "s3://***@bucket/p"),  # an unencoded '@' in the password
        ("s3://bucket/p?region=us-east-1&secret_key=S3CR3T&access_key=AKIA",
         "s3://bucket/p?region=us-east-1&secret_key=***&access_key=***"),
        ("dynamodb://t?region=us-east-1&endpointUrl=http://127.0.0.1:5000&aws_secret_access_key=S%2Fx"
         "&aws_access_key_id=AKIA&aws_session_token=T0K",
         "dynamodb://t?region=us-east-1&endpointUrl=http://127.0.0.1:5000&aws_secret_access_key=***"
         "&aws_access_key_id=***&aws_session_token=***"),
        ("abfs://container@account.dfs.core.windows.net/p?sig=SIGNATURE&sv=2020",
         "abfs://container@account.dfs.core.windows.net/p?sig=***&sv=2020"),
        ("gs://b/p?Password=x;token=y", "gs://b/p?Password=***;token=***"),
        ("https://user:pw@host/x", "https://***@host/x"),
    ],
)
def test_secrets_are_redacted(uri: str, expected: str) -> None:
    assert redact_uri(uri) == expected


@pytest.mark.parametrize(
    "uri",
    [
        "file:///tmp/a:b@c/store",  # '@' and ':' in a path, no authority
        "s3://bucket/user@host/x",  # '@' in a path
        "abfs://container@account.dfs.core.windows.net/p",  # a bare user name is not a secret
        "dynamodb://table?region=us-east-1&endpoint=http://127.0.0.1:5000",
        "memory:", "memory:name", "/plain/path", "relative/dir",
    ],
)
def test_uris_without_secrets_are_unchanged(uri: str) -> None:
    assert redact_uri(uri) == uri


def test_non_strings_are_replaced_entirely() -> None:
    assert redact_uri(None) == "***"  # type: ignore[arg-type]
    assert redact_uri(b"s3://a:b@c") == "***"  # type: ignore[arg-type]


_SECRET = st.text(alphabet=string.ascii_letters + string.digits + "/+=@:!$*", min_size=8, max_size=40)
_PARAM = st.sampled_from(["secret_key", "aws_secret_access_key", "session_token", "AWS_SESSION_TOKEN",
                          "access_key", "password", "sig", "account_key", "sas_token"])


@given(user=st.text(alphabet=string.ascii_uppercase + string.digits, min_size=4, max_size=20), password=_SECRET,
       host=st.sampled_from(["bucket", "b.example.com"]), path=st.sampled_from(["", "/p", "/a/b@c"]))
def test_userinfo_never_survives(user: str, password: str, host: str, path: str) -> None:
    uri = f"s3://{user}:{password}@{host}{path}?region=r"
    redacted = redact_uri(uri)
    assert password not in redacted and user not in redacted
    if "@" not in path:
        assert redacted == f"s3://***@{host}{path}?region=r"
    else:  # an '@' in the path too: the userinfo is taken up to the last '@' (over-redaction is the safe side)
        assert redacted.startswith("s3://***@") and redacted.endswith("?region=r")


@given(name=_PARAM, value=_SECRET.filter(lambda s: "&" not in s), other=st.sampled_from(["", "&region=x"]))
def test_secret_parameters_never_survive(name: str, value: str, other: str) -> None:
    uri = f"dynamodb://table?endpoint=http://h:1&{name}={value}{other}"
    # a "secret" that is part of the URI's public text (e.g. 'dynamodb') cannot be told apart from it
    assume(value not in f"dynamodb://table?endpoint=http://h:1&{name}=***{other}")
    redacted = redact_uri(uri)
    assert value not in redacted
    assert f"{name}=***" in redacted and redacted.startswith("dynamodb://table?endpoint=http://h:1&")


def test_scrub_secrets_removes_uri_and_bare_secret_values() -> None:
    uri = "s3://AKIAXX:wJalr%2FK7MD@bucket/p?session_token=T0KEN123"
    message = (f"could not open {uri}: access key AKIAXX secret wJalr/K7MD (raw wJalr%2FK7MD) "
               "token T0KEN123 rejected")
    scrubbed = scrub_secrets(message, uri)
    for secret in ("AKIAXX", "wJalr/K7MD", "wJalr%2FK7MD", "T0KEN123"):
        assert secret not in scrubbed
    assert "s3://***@bucket/p?session_token=***" in scrubbed


def test_scrub_secrets_cuts_long_messages() -> None:
    assert len(scrub_secrets("x" * 10_000, "memory:", limit=100)) == 104
