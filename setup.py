"""The optional native Kafka reader (spark_samza_source/kafka/executor/_native): built where a C compiler and the Python
headers exist, skipped otherwise (``optional=True``: a failed compile still installs the package, which then reads
through the Python path). It needs no librdkafka headers or library at build time: librdkafka is loaded when the
reader first runs (see spark_samza_source/kafka/executor/native_reader.py). Everything else is in pyproject.toml."""

import sys

from setuptools import Extension, setup

NATIVE = "spark_samza_source/kafka/executor/_native/"

setup(
    ext_modules=[
        Extension(
            "spark_samza_source.kafka.executor._native_reader",
            sources=[NATIVE + "native_reader.c"],
            depends=[NATIVE + "rdkafka_subset.h", NATIVE + "arrow_export.h"],
            extra_compile_args=["-O2", "-std=c99", "-D_GNU_SOURCE", "-Wall", "-Wno-unused-function"],
            libraries=["dl", "pthread"] if sys.platform.startswith("linux") else [],
            optional=True,
        )
    ]
)
