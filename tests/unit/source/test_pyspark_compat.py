"""PySpark's private behaviour the package relies on (source/pyspark_compat.py), checked against the installed
PySpark: load() names the supported range when the running one is outside it, and the streaming runner and the
filter-pushdown worker still look as the compatibility module expects (an upgrade that changes them fails here)."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import json
import re
import sys
import tomllib
import types
from pathlib import Path

import pyspark
import pytest

from spark_samza_source.core.errors import UnsupportedSparkError
from spark_samza_source.source.pyspark_compat import (
    PUSHDOWN_WORKER,
    RUNNER,
    SupportsTriggerAvailableNow,
    called_for_filter_pushdown,
    check_spark_version,
    has_admission_control,
    has_filter_pushdown,
    install_offset_json_guard,
    refuse_pyspark_without_data_sources,
    runner_layout_missing,
    spark_arrow_schema,
)


@pytest.mark.parametrize("version", ["4.0.0", "4.0.5", "4.1.4", "4.2.0", "4.2.1", "4.3.0", "4.3.1.dev0"])
def test_the_tested_versions_pass(version):
    check_spark_version(version)


@pytest.mark.parametrize("version", ["3.5.3", "3.4.4", "4.4.0", "5.0.0", "unknown"])
def test_a_version_outside_the_range_fails_naming_it_the_range_and_the_fix(version):
    with pytest.raises(UnsupportedSparkError) as err:
        check_spark_version(version)
    assert f"PySpark {version}" in str(err.value) and ">=4.0,<4.4" in str(err.value)
    assert "pip install 'pyspark>=4.0,<4.4'" in str(err.value)


@pytest.mark.parametrize("version", ["3.5.3", "3.0.0", "2.4.8"])
def test_a_pyspark_without_python_data_sources_is_refused_on_import(version):
    with pytest.raises(UnsupportedSparkError, match=f"PySpark {re.escape(version)}.*>=4.0,<4.4"):
        refuse_pyspark_without_data_sources(version)


@pytest.mark.parametrize("version", ["4.0.0", "4.3.0", "4.4.0", "unknown"])
def test_only_a_pyspark_older_than_4_0_is_refused_on_import(version):
    refuse_pyspark_without_data_sources(version)  # newer ones are checked at load(), see the function


@pytest.mark.parametrize(("version", "expected"), [("4.0.5", False), ("4.1.4", False), ("4.2.0", True),
                                                   ("4.3.0", True)])
def test_admission_control_is_4_2_and_later(version, expected):
    assert has_admission_control(version) is expected


def test_the_mixin_is_pysparks_where_it_has_one():
    expected = has_admission_control()
    assert (SupportsTriggerAvailableNow.__module__ == "pyspark.sql.streaming.datasource") is expected


def test_the_running_pyspark_is_supported_and_the_extra_pins_the_same_range():
    check_spark_version()  # the one the suite runs
    project = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())["project"]
    assert not any(d.startswith("pyspark") for d in project["dependencies"]), "pyspark must be an extra"
    assert "pyspark>=4.0,<4.4" in project["optional-dependencies"]["spark"]
    assert "pyspark[connect]>=4.0,<4.4" in project["optional-dependencies"]["test"]
    assert pyspark.__version__


def test_the_streaming_runner_still_has_the_layout_the_offset_guard_needs():
    import importlib

    runner = importlib.import_module(RUNNER)
    assert runner_layout_missing(runner) == []


def test_in_the_runner_a_changed_layout_fails_loudly(monkeypatch):
    changed = types.ModuleType("__main__")
    changed.__spec__ = importlib.machinery.ModuleSpec(RUNNER, None)
    changed.json = json  # but no partitions_func etc.
    monkeypatch.setitem(sys.modules, "__main__", changed)
    with pytest.raises(UnsupportedSparkError, match="partitions_func"):
        install_offset_json_guard("samza-kafka")


def test_outside_the_runner_the_guard_changes_nothing():
    before = getattr(sys.modules["__main__"], "json", None)
    install_offset_json_guard("samza-kafka")
    assert getattr(sys.modules["__main__"], "json", None) is before


def test_the_filter_pushdown_worker_is_where_the_stack_check_looks():
    pushes = not pyspark.__version__.startswith("4.0.")  # 4.0 pushes no filters to Python data sources
    assert has_filter_pushdown() is pushes
    assert (importlib.util.find_spec(PUSHDOWN_WORKER) is not None) is pushes
    assert not called_for_filter_pushdown()  # a test is not the pushdown worker


def test_the_arrow_schema_gives_timestamps_in_utc_on_every_version():
    import pyarrow as pa
    from pyspark.sql.types import StringType, StructField, StructType, TimestampType

    schema = StructType([StructField("ts", TimestampType(), True), StructField("s", StringType(), True)])
    arrow = spark_arrow_schema(schema)
    assert arrow.field("ts").type == pa.timestamp("us", tz="UTC") and arrow.field("s").type == pa.string()
