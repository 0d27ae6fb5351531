"""The optional native Kafka reader (spark_samza_source/kafka/executor/_native): built where a C compiler and the Python
headers exist, skipped otherwise (a failed compile still installs the package, which then reads through the Python
path). It needs no librdkafka headers or library at build time: librdkafka is loaded when the reader first runs
(see spark_samza_source/kafka/executor/native_reader.py). Everything else is in pyproject.toml.

The reader uses only Python's stable ABI (the limited API of 3.11), so its wheel is tagged ``cp311-abi3``: one
wheel per platform serves every CPython from 3.11 on.

``SAMZA_NATIVE_READER`` chooses what a build does with the reader (``make wheel`` and ``make dist`` set it):

- ``optional`` (the default; ``pip install`` from the sdist): compiled where it can be, skipped otherwise;
- ``required``: a compile failure fails the build (release wheels must hold the reader they are named for);
- ``none``: not compiled: the build is a pure ``py3-none-any`` wheel that reads through the Python path.
"""

import os
import sys

from setuptools import Extension, setup

NATIVE = "spark_samza_source/kafka/executor/_native/"
LIMITED_API = 0x030B0000  # 3.11, the oldest Python the package supports (requires-python)
MODES = ("optional", "required", "none")

mode = os.environ.get("SAMZA_NATIVE_READER", "optional")
if mode not in MODES:
    sys.exit(f"SAMZA_NATIVE_READER={mode!r}: expected one of {', '.join(MODES)}")

extensions = [] if mode == "none" else [
    Extension(
        "spark_samza_source.kafka.executor._native_reader",
        sources=[NATIVE + "native_reader.c"],
        depends=[NATIVE + "rdkafka_subset.h", NATIVE + "arrow_export.h"],
        define_macros=[("Py_LIMITED_API", hex(LIMITED_API))],
        py_limited_api=True,
        extra_compile_args=["-O2", "-std=c99", "-D_GNU_SOURCE", "-Wall", "-Wno-unused-function"],
        libraries=["dl", "pthread"] if sys.platform.startswith("linux") else [],
        optional=mode == "optional",
    )
]

setup(
    ext_modules=extensions,
    # the wheel's tag says what the extension needs: cp311-abi3 (any CPython >= 3.11); a pure build has no
    # extension and gets py3-none-any
    options={"bdist_wheel": {"py_limited_api": "cp311"}} if extensions else {},
)
