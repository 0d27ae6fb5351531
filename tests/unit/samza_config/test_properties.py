"""Java ``.properties`` syntax (``samza_config/properties.py``): separators, comments, continuations, escapes,
encodings, and the repository's own ``conf/*.properties`` files read with it."""

from pathlib import Path

import pytest

from spark_samza_source.core.errors import ConfigError
from spark_samza_source.samza_config import parse_properties, read_properties

CONF = Path(__file__).resolve().parents[3] / "conf"


# ---- Java properties syntax -------------------------------------------------------------------------------


def test_separators_equal_colon_whitespace_and_key_only():
    text = "a=1\nb:2\nc 3\nd = 4\ne :5\nf\t \t6\ng\nh=\ni = = x\nj:=y\n"
    assert parse_properties(text) == {
        "a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6", "g": "", "h": "", "i": "= x", "j": "=y",
    }


def test_comments_blank_lines_and_hash_inside_values():
    text = "# comment\n! also a comment\n   # indented comment\n\n \t\nkey=value # not a comment\nurl=a!b#c\n"
    assert parse_properties(text) == {"key": "value # not a comment", "url": "a!b#c"}


def test_leading_whitespace_is_skipped_and_trailing_whitespace_of_values_kept():
    assert parse_properties("   key = value  \n") == {"key": "value  "}


def test_line_continuations():
    text = (
        "task.inputs=kafka.orders,\\\n"
        "            kafka.payments,\\\n"
        "   # not a comment when continued\n"
        "even=ends with an escaped backslash \\\\\n"
        "next=1\n"
    )
    assert parse_properties(text) == {
        "task.inputs": "kafka.orders,kafka.payments,# not a comment when continued",
        "even": "ends with an escaped backslash \\",
        "next": "1",
    }


def test_a_comment_never_continues_and_an_empty_continuation_ends_the_entry():
    assert parse_properties("# comment \\\nkey=1\n") == {"key": "1"}
    assert parse_properties("a=x\\\n\nb=2\n") == {"a": "x", "b": "2"}


def test_backslash_at_end_of_file_is_dropped():
    assert parse_properties("key=value\\") == {"key": "value"}


def test_escapes_in_keys_and_values():
    text = (
        "key\\ with\\ spaces = v\n"
        "a\\=b\\:c=d\n"
        "tabs=x\\ty\\nz\\rw\\fv\n"
        "unicode=caf\\u00e9 \\u20AC\n"
        "emoji=\\uD83D\\uDE00\n"
        "other=\\q\\#\\!\n"
        "path=C:\\\\dir\\\\file\n"
    )
    assert parse_properties(text) == {
        "key with spaces": "v",
        "a=b:c": "d",
        "tabs": "x\ty\nz\rw\fv",
        "unicode": "café €",
        "emoji": "\U0001F600",
        "other": "q#!",
        "path": "C:\\dir\\file",
    }


def test_malformed_unicode_escape_names_the_line():
    with pytest.raises(ConfigError, match=r"line 2: malformed \\uXXXX escape"):
        parse_properties("ok=1\nbad=\\u12G4\n")
    with pytest.raises(ConfigError, match="line 1"):
        parse_properties("short=\\u12")


def test_line_endings_crlf_and_cr():
    assert parse_properties("a=1\r\nb=2\rc=3\\\r\n  4\n") == {"a": "1", "b": "2", "c": "34"}


def test_duplicate_keys_last_wins():
    assert parse_properties("a=1\na=2\n") == {"a": "2"}


def test_read_properties_utf8_bom_and_latin1_fallback(tmp_path):
    utf8 = tmp_path / "utf8.properties"
    utf8.write_bytes("\ufeffjob.name=caf\u00e9\n".encode())
    assert read_properties(utf8) == {"job.name": "café"}
    latin1 = tmp_path / "latin1.properties"
    latin1.write_bytes("job.name=caf\u00e9\n".encode("iso-8859-1"))
    assert read_properties(latin1) == {"job.name": "café"}


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read Samza properties file"):
        read_properties(tmp_path / "nope.properties")


# ---- conf/ ------------------------------------------------------------------------------------------------------


def test_spark_defaults_for_local_runs():
    conf = read_properties(CONF / "spark-defaults.conf")  # Spark reads it with java.util.Properties too
    assert conf["spark.python.worker.reuse"] == "true"
    assert conf["spark.ui.enabled"] == "false"
    assert conf["spark.ui.showConsoleProgress"] == "false"
    assert 1 <= int(conf["spark.sql.shuffle.partitions"]) <= 16
    assert all(key.startswith("spark.") for key in conf)
    text = (CONF / "spark-defaults.conf").read_text()
    assert "PYSPARK_PYTHON" in text


def test_log4j2_properties_stay_quiet():
    conf = read_properties(CONF / "log4j2.properties")
    assert conf["rootLogger.level"] in ("warn", "error")
    levels = {conf[k[: -len(".name")] + ".level"] for k in conf if k.startswith("logger.") and k.endswith(".name")}
    assert levels <= {"warn", "error", "off"}
