"""The pure core must import with none of the product's heavy dependencies installed.

A subprocess blocks pyspark, pyarrow, confluent_kafka, boto3/botocore and kafka (setting ``sys.modules[name]
= None`` makes any import of them fail, exactly as if they were not installed), imports every module of
``spark_samza_source.core`` and reports which non-stdlib modules got loaded.
"""

import json
import pkgutil
import subprocess
import sys

import spark_samza_source.core as core

BLOCKED = ["pyspark", "pyarrow", "confluent_kafka", "boto3", "botocore", "kafka", "moto"]

PROBE = r"""
import importlib, json, sys
for name in {blocked!r}:
    sys.modules[name] = None
before = set(sys.modules)
failed = {{}}
for mod in {modules!r}:
    try:
        importlib.import_module(mod)
    except Exception as err:
        failed[mod] = repr(err)
loaded = sorted(m.split(".")[0] for m in set(sys.modules) - before)
third_party = sorted({{m for m in loaded if m not in sys.stdlib_module_names and m != "spark_samza_source"}})
print(json.dumps({{"failed": failed, "third_party": third_party}}))
"""


def core_modules() -> list[str]:
    names = [core.__name__]
    for info in pkgutil.walk_packages(core.__path__, prefix=core.__name__ + "."):
        names.append(info.name)
    return names


def test_core_has_modules_to_check():
    # Guards the test below against passing vacuously if the package layout changes.
    assert len(core_modules()) >= 4


def test_core_imports_without_pyspark_kafka_boto3_or_pyarrow():
    code = PROBE.format(blocked=BLOCKED, modules=core_modules())
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["failed"] == {}, f"core modules failed to import without optional deps: {result['failed']}"
    assert result["third_party"] == [], f"core pulled in non-stdlib modules: {result['third_party']}"
