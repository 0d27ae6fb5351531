"""The ``metadata.store`` URI's words and the redaction of its secrets, shared by the store opener
(``metadata/__init__.py``) and every backend. The redaction itself lives with the other secrets
(``options/secrets.py``, the one declaration of what is secret); it is re-exported here.

A module of its own so the backends import it, not the package that imports them: the package loads a backend
only when its URI is opened (so ``file:`` never imports boto3), and no import runs in a circle.
"""

from __future__ import annotations

from ..options.common import METADATA_STORE
from ..options.secrets import _SCHEME_RE, REDACTED, _userinfo_span, redact_uri, scrub_secrets

__all__ = ["OPTION", "PYARROW_SCHEMES", "REDACTED", "SUPPORTED_FORMS", "_SCHEME_RE", "_userinfo_span", "redact_uri",
           "scrub_secrets"]

#: the option users set; named in every configuration error
OPTION = METADATA_STORE.name

SUPPORTED_FORMS = (
    "memory:[NAME], file:///ABSOLUTE/PATH or a plain directory path, "
    "s3://BUCKET/PREFIX?region=REGION&endpoint=URL (boto3), "
    "gs://BUCKET/PREFIX, abfs://CONTAINER@ACCOUNT.dfs.core.windows.net/PREFIX, "
    "hdfs://HOST/PATH (any URI pyarrow.fs.FileSystem.from_uri supports), "
    "dynamodb://TABLE?region=REGION&endpoint=URL"
)

#: schemes handed to pyarrow.fs.FileSystem.from_uri (s3 has its own boto3 store, with conditional writes)
PYARROW_SCHEMES = frozenset({"gs", "gcs", "abfs", "abfss", "hdfs", "viewfs", "local", "mock"})
