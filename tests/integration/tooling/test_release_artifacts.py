"""The release artifacts of ``make dist`` (docs/deployment.md, "Release artifacts"): what each one holds, that each
platform wheel's reader is compiled for its CPU and needs no glibc past manylinux2014's (2.17), and that the
aarch64 wheel, installed with PyPI's aarch64 wheels of its dependencies, loads and reads records through the
native path under emulation (qemu-user-static with Debian's arm64 Python 3.11: ``make dist-arm64``).

Run by ``make dist-check``, which builds the artifacts first and names their directory in ``SAMZA_RELEASE_DIST``;
elsewhere (``make test``) every test here skips saying so. The x86_64 and pure wheels are put to use, each in a
clean virtualenv and with spark-submit, by the release tests of ``test_spark_submit.py``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from samza_devkit.kafka_helpers import create_topic, produce, unique_topic

pytestmark = [pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]
PROBE = Path(__file__).with_name("release_probe.py")
ARCHS = {"x86_64": 62, "aarch64": 183}  # ELF e_machine: EM_X86_64, EM_AARCH64
POLICY_GLIBC = (2, 17)  # manylinux2014
READER = "spark_samza_source/kafka/executor/_native_reader.abi3.so"


@pytest.fixture(scope="module")
def release() -> dict[str, Path]:
    """{'sdist', 'pure', 'x86_64', 'aarch64'} -> the artifact ``make dist`` wrote."""
    where = os.environ.get("SAMZA_RELEASE_DIST")
    if not where:
        pytest.skip("release artifacts are checked by `make dist-check` (it runs `make dist` and sets "
                    "SAMZA_RELEASE_DIST)")
    files = sorted(Path(where).iterdir())
    found: dict[str, Path] = {}
    for path in files:
        name = path.name
        kind = ("sdist" if name.endswith(".tar.gz") else "pure" if name.endswith("-py3-none-any.whl")
                else next((a for a in ARCHS if name.endswith(f"_{a}.whl")), name))
        assert kind not in found, f"two artifacts of one kind: {found.get(kind)} and {path}"
        found[kind] = path
    return found


def test_release_holds_an_sdist_a_pure_wheel_and_one_manylinux2014_abi3_wheel_per_cpu(release):
    assert set(release) == {"sdist", "pure", "x86_64", "aarch64"}, sorted(p.name for p in release.values())
    version = release["sdist"].name.removeprefix("spark_samza_source-").removesuffix(".tar.gz")
    assert release["pure"].name == f"spark_samza_source-{version}-py3-none-any.whl"
    for arch in ARCHS:
        # cp311-abi3: one wheel for every CPython from 3.11 on; both manylinux names so any pip >= 19.3 takes it
        assert release[arch].name == (f"spark_samza_source-{version}-cp311-abi3-manylinux2014_{arch}."
                                      f"manylinux_2_17_{arch}.whl")
    with zipfile.ZipFile(release["pure"]) as pure:
        names = pure.namelist()
        wheel_meta = pure.read(next(n for n in names if n.endswith(".dist-info/WHEEL"))).decode()
    assert "spark_samza_source/kafka/executor/native_reader.py" in names
    assert not [n for n in names if n.endswith((".so", ".c", ".h"))], "no compiled reader, nor its sources"
    assert "Root-Is-Purelib: true" in wheel_meta and "Tag: py3-none-any" in wheel_meta
    for arch in ARCHS:
        with zipfile.ZipFile(release[arch]) as wheel:
            compiled = [n for n in wheel.namelist() if n.endswith(".so")]
        assert compiled == [READER], compiled
        assert not [n for n in wheel.namelist() if n.endswith((".c", ".h"))], "the reader's sources: sdist only"


def test_release_sdist_builds_the_reader_and_holds_no_tests_or_development_kit(release):
    with tarfile.open(release["sdist"]) as sdist:
        names = [n.split("/", 1)[1] for n in sdist.getnames() if "/" in n]
    for needed in ("setup.py", "pyproject.toml", "README.md", "LICENSE",
                   "spark_samza_source/kafka/executor/_native/native_reader.c",
                   "spark_samza_source/kafka/executor/_native/rdkafka_subset.h",
                   "spark_samza_source/kafka/executor/_native/arrow_export.h",
                   "pyspark_samza_kafka/__init__.py", "pyspark_samza_kinesis/__init__.py"):
        assert needed in names, needed
    assert not [n for n in names if n.startswith(("tests/", "devkit/", "benchmarks/", "build/", "dist/"))]
    assert not [n for n in names if n.endswith(".so")], "a compiled reader of this machine leaked into the sdist"


def _elf_machine(data: bytes) -> tuple[int, int, int]:
    """(class, byte order, e_machine) of an ELF file's header."""
    assert data[:4] == b"\x7fELF", data[:4]
    ei_class, ei_data = data[4], data[5]
    (machine,) = struct.unpack_from("<H" if ei_data == 1 else ">H", data, 18)
    return ei_class, ei_data, machine


@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_release_platform_wheel_is_compiled_for_its_cpu_and_needs_no_glibc_past_2_17(release, arch):
    with zipfile.ZipFile(release[arch]) as wheel:
        reader = wheel.read(READER)
    assert _elf_machine(reader) == (2, 1, ARCHS[arch])  # 64-bit, little-endian, the wheel's CPU

    auditwheel = REPO / "build" / "dist-tools" / "bin" / "auditwheel"
    proc = subprocess.run([str(auditwheel), "show", str(release[arch])], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = " ".join(proc.stdout.split())
    assert f'consistent with the following platform tag: "manylinux_2_17_{arch}"' in text, text
    versions = {tuple(int(x) for x in v.split(".")) for v in re.findall(r"GLIBC_(\d+\.\d+(?:\.\d+)?)", text)}
    assert versions and max(versions) <= POLICY_GLIBC, versions


def _arm64_python() -> tuple[list[str], Path] | str:
    """The command that runs Debian's arm64 Python under qemu and its sysroot, or why there is none."""
    root = Path(os.environ.get("SAMZA_ARM64_ROOT", REPO / "build" / "arm64")) / "sysroot"
    qemu = shutil.which("qemu-aarch64-static") or shutil.which("qemu-aarch64")
    if not qemu:
        return "no qemu-aarch64 (Debian's qemu-user-static: `make dist-arm64` installs it as root)"
    if not (root / "usr" / "bin" / "python3.11").exists():
        return f"no arm64 Python 3.11 under {root} (`make dist-arm64` unpacks Debian's)"
    return [qemu, "-L", str(root), str(root / "usr" / "bin" / "python3.11")], root


def test_release_aarch64_wheel_reads_records_through_the_native_path_under_emulation(release, kafka_broker,
                                                                                    tmp_path):
    found = _arm64_python()
    if isinstance(found, str):
        pytest.skip(f"the aarch64 wheel cannot run here: {found}; its ELF header and symbol versions are checked "
                    "by test_release_platform_wheel_is_compiled_for_its_cpu_and_needs_no_glibc_past_2_17")
    python, _root = found
    site = tmp_path / "site"
    # the wheel with PyPI's aarch64 wheels of its dependencies, as pip on a Graviton host would install them
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--target", str(site), "--only-binary=:all:",
                    "--implementation", "cp", "--python-version", "3.11", "--platform", "manylinux2014_aarch64",
                    "--platform", "manylinux_2_28_aarch64", str(release["aarch64"])], check=True, timeout=600)
    assert (site / "pyarrow").is_dir() and (site / "confluent_kafka.libs").is_dir()
    # PySpark's Python side (imported by the input partitions) and py4j are pure Python: this run's copies serve
    pure = tmp_path / "pure"
    pure.mkdir()
    for module in ("pyspark", "py4j"):
        source = Path(__import__(module).__file__).parent
        (pure / module).symlink_to(source, target_is_directory=True)

    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap, unique_topic("arm64"), 1)
    produce(bootstrap, topic, [(None, f"record-{i}".encode(), None, 0) for i in range(6)])
    proc = subprocess.run([*python, str(PROBE), bootstrap, topic, "6", "native"], capture_output=True, text=True,
                          timeout=600, env={"PATH": os.environ["PATH"], "PYTHONPATH": f"{site}:{pure}"})
    lines = [line for line in proc.stdout.splitlines() if line.startswith("PROBE ")]
    assert proc.returncode == 0 and len(lines) == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    probe = json.loads(lines[0][len("PROBE "):])
    assert probe["machine"] == "aarch64" and probe["python"].startswith("3.11."), probe
    assert probe["extension"] == str(site / READER), probe
    assert probe.get("error") is None, probe
    assert probe["values"] == [f"record-{i}" for i in range(6)], probe
    assert "samza-kafka executor reads through the native path (extension and librdkafka loaded)" in probe["log"]
