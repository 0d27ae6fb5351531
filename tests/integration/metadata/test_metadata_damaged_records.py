"""The damaged-record rule (docs/guarantees.md, ``core/damage.py``) on every store: one damaged record of each
stored kind on ``file:``, ``s3://`` and ``dynamodb://`` (both on moto's server), read the way the query reads it,
lands on the kind's verdict: a skip kind keeps its valid records and leaves the damaged one out, a fail kind stops
naming the record, its kind and the repair. Every way of damaging a record, and a fuzz of them, on the ``file:``
store: tests/unit/metadata/test_damaged_records.py (the stores share the envelope, so the moto part stays small).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from samza_devkit.aws_fixtures import drop_dynamodb_table, unique_aws_name
from samza_devkit.damaged_records import KINDS, KindCase, lands_on_the_rule
from samza_devkit.s3_fixtures import drop_s3_bucket, make_s3_bucket, s3_uri
from spark_samza_source.metadata import MetadataStore, open_store

STORES = ["file", "s3", "dynamodb"]
REGION = "us-east-1"


@pytest.fixture(scope="module")
def store_uris(moto_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """One bucket and one table for the module (each test is a job of its own in them): creating one per test
    would cost more than the tests."""
    bucket = make_s3_bucket(moto_server, REGION)
    table = unique_aws_name("samza-damaged")
    yield {"file": tmp_path_factory.mktemp("damaged").as_uri(), "s3": s3_uri(bucket, moto_server, REGION),
           "dynamodb": f"dynamodb://{table}?region={REGION}&endpoint={moto_server}"}
    drop_s3_bucket(moto_server, REGION, bucket)
    drop_dynamodb_table(moto_server, REGION, table)


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, store_uris: dict[str, str]) -> Iterator[MetadataStore]:
    opened = open_store(store_uris[request.param], f"damaged-{uuid.uuid4().hex[:8]}")
    yield opened
    opened.close()


@pytest.mark.parametrize("damage", ["truncated"])
@pytest.mark.parametrize("case", KINDS, ids=lambda case: case.kind)
def test_a_damaged_record_lands_on_its_kinds_rule_on_every_store(case: KindCase, damage: str,
                                                                 store: MetadataStore):
    """Backs Guarantees (docs/guarantees.md, the damaged-record rule): the same verdict on every store."""
    lands_on_the_rule(case, store, damage)
