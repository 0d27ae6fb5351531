"""load() names the supported PySpark range when the running one is outside it."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pyspark
import pytest

from spark_samza_source.core.errors import UnsupportedSparkError
from spark_samza_source.source.spark_version import check_spark_version


@pytest.mark.parametrize("version", ["4.2.0", "4.2.1", "4.3.0", "4.3.1.dev0"])
def test_the_tested_versions_pass(version):
    check_spark_version(version)


@pytest.mark.parametrize("version", ["3.5.3", "4.1.4", "4.4.0", "5.0.0", "unknown"])
def test_a_version_outside_the_range_fails_naming_it_and_the_range(version):
    with pytest.raises(UnsupportedSparkError) as err:
        check_spark_version(version)
    assert f"PySpark {version}" in str(err.value) and ">=4.2,<4.4" in str(err.value)
    assert "spark-samza-source[spark]" in str(err.value)


def test_the_running_pyspark_is_supported_and_the_extra_pins_the_same_range():
    check_spark_version()  # the one the suite runs
    project = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())["project"]
    assert not any(d.startswith("pyspark") for d in project["dependencies"]), "pyspark must be an extra"
    assert "pyspark>=4.2,<4.4" in project["optional-dependencies"]["spark"]
    assert pyspark.__version__
