"""The devkit finds a transactional id's coordinator as Kafka does (``TransactionStateManager.partitionFor``:
``Utils.abs(transactionalId.hashCode) % partitions``), so the replicated-cluster test kills the right node."""

from samza_devkit.kafka_cluster import _java_abs, _java_string_hash


def test_java_string_hash_matches_javas_string_hashcode():
    # values Java's String.hashCode gives: "hello", the empty string, one past BMP (a surrogate pair), and the
    # string whose hash is Integer.MIN_VALUE
    assert _java_string_hash("hello") == 99162322
    assert _java_string_hash("") == 0
    assert _java_string_hash("\U0001F600") == 31 * 0xD83D + 0xDE00  # its UTF-16 code units, not the code point
    assert _java_string_hash("polygenelubricants") == -(1 << 31)


def test_kafkas_abs_maps_integer_min_value_to_zero():
    assert _java_abs(-(1 << 31)) == 0
    assert _java_abs(-5) == 5
