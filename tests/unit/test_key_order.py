"""The per-key order count behind the order test and the head-to-head benchmark (samza_devkit.key_order): what it
counts must be right, or "Spark's source > 0, samza-kafka == 0" proves nothing."""

from types import SimpleNamespace

from samza_devkit.key_order import ahead_of_key_order, keyed_rounds


def rows(*pairs):
    return [SimpleNamespace(key=key, value=key + b":" + str(seq).encode()) for key, seq in pairs]


def test_records_in_write_order_across_batches_count_nothing_whatever_the_order_within_a_batch():
    batches = [(0, rows((b"a", 1), (b"a", 0), (b"b", 0))), (1, rows((b"a", 2), (b"b", 1))), (2, rows((b"b", 2)))]
    assert ahead_of_key_order(batches) == {}


def test_each_record_delivered_before_an_earlier_write_of_its_key_counts_once():
    # a's 2 and 3 came in batch 0, before a's 1 (batch 1): two records ahead; b is in order; c's 1 came before c's 0
    batches = [(0, rows((b"a", 0), (b"a", 2), (b"a", 3), (b"b", 0), (b"c", 1))),
               (1, rows((b"a", 1), (b"b", 1), (b"c", 0)))]
    assert ahead_of_key_order(batches) == {b"a": 2, b"c": 1}


def test_a_record_overtaking_several_earlier_writes_counts_once():
    batches = [(0, rows((b"a", 3))), (1, rows((b"a", 0))), (2, rows((b"a", 1), (b"a", 2)))]
    assert ahead_of_key_order(batches) == {b"a": 1}


def test_keyed_rounds_number_each_key_from_the_first_sequence():
    produced = keyed_rounds([b"x", b"y"], 5, 2)
    assert produced == [(b"x", b"x:5"), (b"y", b"y:5"), (b"x", b"x:6"), (b"y", b"y:6")]
