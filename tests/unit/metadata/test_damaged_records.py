"""The damaged-record rule (docs/guarantees.md, ``core/damage.py``) on the ``file:`` store: every stored kind, every
way a record is damaged, read the way the query reads it; and a fuzz of the readers, driven by Hypothesis, in
which every damaged record lands on its kind's verdict (the named error or the skip), never on a traceback.

The same kinds on ``s3://`` and ``dynamodb://`` (moto): tests/integration/metadata/test_metadata_damaged_records.py.
"""

from __future__ import annotations

import json
import tempfile
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from samza_devkit.damaged_records import DAMAGES, KINDS, KindCase, lands_on_the_rule, plant_envelope
from spark_samza_source.core.damage import RULES, Verdict
from spark_samza_source.core.errors import SamzaSourceError
from spark_samza_source.kinesis.microbatch_ends import BatchEnds
from spark_samza_source.kinesis.positions import ShardPosition
from spark_samza_source.metadata.filesystem import FileSystemMetadataStore


def new_store(root: str) -> FileSystemMetadataStore:
    return FileSystemMetadataStore.local(root, f"job-{uuid.uuid4().hex[:8]}")


def test_every_namespace_of_a_job_has_one_rule():
    from spark_samza_source.options.namespaces import NAMESPACES, STREAM_CONSUMERS, VALUE_CHUNKS

    # a value chunk has no rule of its own: it is read only through its owner's pointer, under the owner's rule
    assert {rule.namespace for rule in RULES} == set(NAMESPACES) - {STREAM_CONSUMERS, VALUE_CHUNKS}
    assert {case.namespace for case in KINDS} == {rule.namespace for rule in RULES}


@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.parametrize("case", KINDS, ids=lambda case: case.kind)
def test_a_damaged_record_of_each_kind_lands_on_its_rule(case: KindCase, damage: str, tmp_path):
    """Backs Guarantees (docs/guarantees.md, the damaged-record rule): each kind, each damage, on file:."""
    lands_on_the_rule(case, new_store(str(tmp_path)), damage)


def test_a_damaged_batch_end_of_another_batch_hides_nothing_of_this_one(tmp_path):
    """Backs Guarantees (the damaged-record rule): a damaged record never hides the valid ones of its kind, not even
    for a fail kind, and is removed only with a WARN."""
    store = new_store(str(tmp_path))
    ends = BatchEnds(store, stream="clicks")
    ends.record(5, "shardId-000000000000", ShardPosition.after_sequence("100"))
    ends.record(4, "shardId-000000000000", ShardPosition.after_sequence("50"))
    plant_envelope(store, "kinesis-batch-ends", ends.key(4, "shardId-000000000000"), b"{torn")
    assert list(ends.recorded_for(5)) == ["shardId-000000000000"]
    with pytest.raises(SamzaSourceError, match="kind: batch ends"):
        ends.recorded_for(4)
    assert ends.cleanup_before(5) == 1  # the committed batch's damaged end goes with it, said in a WARN
    assert ends.recorded_for(4) == {}


# ---- fuzz: every reader lands on the rule ------------------------------------------------------------------------
_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                  max_size=3),
                     max_leaves=8)


def _envelope(key: str, value, fmt: int = 1) -> bytes:
    return json.dumps({"format": fmt, "key": key, "value": value}).encode()


def _record_of_other_kinds(case: KindCase, root: str) -> list:
    """Valid records of every other kind: what a record copied from another job, or another namespace, holds."""
    values = []
    for other in KINDS:
        if other is case:
            continue
        store = new_store(root)
        other.seed(store)
        values.extend(store.list(other.namespace).values())
    return values


def _damaged(case: KindCase, root: str) -> st.SearchStrategy[bytes]:
    key = case.damaged_key
    return st.one_of(
        st.binary(max_size=64),  # random bytes
        st.integers(1, 60).map(lambda cut: _envelope(key, {"positions": [1, 2, 3]})[:cut]),  # truncated
        _json.map(lambda value: _envelope(key, value)),  # valid JSON of the wrong shape
        st.integers(2, 10**6).map(lambda fmt: _envelope(key, {"format": 1}, fmt)),  # a newer envelope
        _json.map(lambda value: _envelope(key, {"format": 0, "version": 0, "value": value})),  # an older record
        st.sampled_from(_record_of_other_kinds(case, root)).map(lambda value: _envelope(key, value)),  # another's
    )


@pytest.mark.parametrize("case", KINDS, ids=lambda case: case.kind)
def test_fuzzed_records_land_on_the_rule_never_on_a_traceback(case: KindCase, tmp_path):
    """Backs Guarantees (the damaged-record rule): truncated records, random bytes, JSON of the wrong shape, newer
    and older formats, another kind's or job's record each land on the verdict, within a fixed budget."""
    root = str(tmp_path)

    @settings(max_examples=25, deadline=2000, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(data=_damaged(case, root))
    def lands(data: bytes) -> None:
        store = new_store(tempfile.mkdtemp(dir=root))
        case.seed(store)
        plant_envelope(store, case.namespace, case.damaged_key, data)
        try:
            kept, skipped = case.read(store)
        except SamzaSourceError as err:
            assert case.verdict is Verdict.FAIL, f"{case.kind} is a skip kind but failed: {err}"
            assert err.condition and err.condition.startswith("SAMZA_"), err
            return
        if case.verdict is Verdict.SKIP:  # skipped, or (by chance) a valid record: never the valid one hidden
            assert kept >= 1 and kept + skipped == 2, (kept, skipped)

    lands()
