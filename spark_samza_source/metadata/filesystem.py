"""``file:`` and object-store metadata stores: one small JSON file per key, through ``pyarrow.fs``.

Layout (human-readable on purpose, so operators can inspect a job with ``ls`` and ``cat``)::

    <root>/<job>/<namespace>/<encoded key>.json      {"format": 1, "key": "<key>", "value": <JSON value>}

Key encoding: the key's UTF-8 bytes, percent-encoded except ``A-Z a-z 0-9 - _ . ~ , = @`` (a leading ``.`` is
encoded too, so no key can be hidden, ``.`` or ``..``). It is reversible and safe on every filesystem and object
store. A key whose encoding is longer than ``MAX_ENCODED_NAME`` bytes (or the empty key) is stored as
``!<sha256 of the key>.json``: a raw ``!`` never occurs in an encoded name, so the two forms cannot collide, and
the original key is read back from the envelope. Every file carries its key, so a renamed or misplaced file
is detected rather than silently served under the wrong key. Keys differing only in letter case collide on
case-insensitive filesystems (default macOS/Windows volumes); use a case-sensitive volume there.

Local files (``file:``) are safe across processes and crashes:

- every write goes to a temporary file in the same directory (``.tmp-<random>``, fsynced), then ``os.replace``
  (an atomic rename on POSIX), so a reader or a crash never sees a torn value; readers ignore dot files, and
  ``list`` sweeps temporary files a killed writer left behind more than an hour ago;
- ``put_if_absent`` publishes the temporary file with ``os.link``, which fails if the name exists: an atomic
  create-exclusive that needs no lock;
- ``put``, ``delete`` and ``delete_if_equal`` hold an exclusive ``fcntl.flock`` on ``<namespace>/.lock`` while
  they touch the key, so ``delete_if_equal`` can never remove a value that a concurrent ``put`` just wrote.
  The kernel drops the lock when a process dies, so a killed writer never blocks the others.

Object stores (``s3:``, ``gs:``, ``abfs:``, ``hdfs:`` ...) go through ``pyarrow.fs``: a PUT of a whole object is
atomic on S3/GCS (elsewhere a temporary file is moved into place), but ``pyarrow.fs`` exposes neither locks nor
conditional writes, so ``put_if_absent``/``delete_if_equal`` there are check-then-act, i.e. **best-effort**: the
store logs a warning on first use and sets ``atomic_conditionals = False``. Run a single writer per job, or use
``file:`` on a shared POSIX filesystem or ``dynamodb://`` when several processes write concurrently.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import os
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from ..core import errors
from ..core.errors import SamzaSourceError
from ..core.store import (
    DAMAGE_ERRORS,
    DamagedRecord,
    JsonValue,
    MetadataStore,
    StoreScan,
    is_damage,
    validate_job_name,
    validate_namespace,
)
from .uri import OPTION, SUPPORTED_FORMS, redact_uri, scrub_secrets

try:  # POSIX only; elsewhere the local store falls back to best-effort conditionals
    import fcntl
except ImportError:  # pragma: no cover - not on Linux/macOS
    fcntl = None  # type: ignore[assignment]

__all__ = ["FileSystemMetadataStore", "encode_key", "decode_name", "FORMAT_VERSION", "MAX_ENCODED_NAME"]

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
SUFFIX = ".json"
HASH_PREFIX = "!"
LOCK_NAME = ".lock"
TEMP_PREFIX = ".tmp-"
#: ``list`` removes temporary files older than this (left by a writer killed between write and rename)
STALE_TEMP_SECONDS = 3600
#: longest encoded key kept readable; NAME_MAX is 255 bytes on most filesystems (143 on eCryptfs), and the
#: suffix and temporary names need room too
MAX_ENCODED_NAME = 120

_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~,=@")
_HEX = frozenset("0123456789abcdef")
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _key_bytes(key: str) -> bytes:
    try:
        return key.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise errors.metadata_value_not_storable(
            f"metadata key {key!r:.200} is not valid Unicode text ({exc.reason}); keys must encode as UTF-8"
        ) from None


def hashed_name(key: str) -> str:
    """The file stem of a key too long (or empty) for a readable name."""
    return HASH_PREFIX + hashlib.sha256(_key_bytes(key)).hexdigest()


def encode_key(key: str) -> str:
    """The file stem (without ``.json``) for ``key``: reversible percent-encoding, or a hashed name."""
    raw = _key_bytes(key)
    parts = []
    for i, byte in enumerate(raw):
        if byte in _SAFE and not (i == 0 and byte == 0x2E):  # a leading '.' would hide the file
            parts.append(chr(byte))
        else:
            parts.append(f"%{byte:02X}")
    name = "".join(parts)
    if not name or len(name) > MAX_ENCODED_NAME:
        return hashed_name(key)
    return name


def decode_name(stem: str) -> str | None:
    """The key a readable file stem encodes; None for a hashed stem or a name this store did not write."""
    if stem.startswith(HASH_PREFIX):
        return None
    try:
        key = urllib.parse.unquote_to_bytes(stem).decode("utf-8")
    except UnicodeDecodeError:
        return None
    return key if encode_key(key) == stem else None


def _is_hashed(stem: str) -> bool:
    return len(stem) == 65 and stem.startswith(HASH_PREFIX) and set(stem[1:]) <= _HEX


class _LocalBackend:
    """POSIX files: temp + fsync + rename, link for create-exclusive, flock for read-modify-write."""

    atomic_conditionals = fcntl is not None
    sep = os.sep

    def read(self, path: str) -> bytes | None:
        try:
            with open(path, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def names(self, directory: str) -> list[str]:
        """File names in ``directory``; sweeps temporary files that a killed writer left over an hour ago."""
        try:
            with os.scandir(directory) as it:
                entries = [e for e in it if e.is_file()]
        except FileNotFoundError:
            return []
        cutoff = time.time() - STALE_TEMP_SECONDS
        for e in entries:
            if e.name.startswith(TEMP_PREFIX):
                with contextlib.suppress(OSError):
                    if e.stat().st_mtime < cutoff:
                        os.unlink(e.path)
        return [e.name for e in entries]

    def _stage(self, directory: str, data: bytes) -> str:
        """Write ``data`` to a fresh fsynced temporary file in ``directory`` (created if missing)."""
        tmp = os.path.join(directory, f"{TEMP_PREFIX}{uuid.uuid4().hex}")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_CLOEXEC, 0o666)
        except FileNotFoundError:  # first write, or the root vanished: (re)create the directories
            os.makedirs(directory, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_CLOEXEC, 0o666)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            _unlink_quietly(tmp)
            raise
        os.close(fd)
        return tmp

    @contextlib.contextmanager
    def _locked(self, directory: str, create: bool) -> Iterator[bool]:
        """Hold the namespace lock; yields False (without locking) if the directory is missing and not created."""
        if fcntl is None:  # pragma: no cover - non-POSIX
            yield True
            return
        path = os.path.join(directory, LOCK_NAME)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | _O_CLOEXEC, 0o666)
        except FileNotFoundError:
            if not create:
                yield False
                return
            os.makedirs(directory, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | _O_CLOEXEC, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield True
        finally:
            os.close(fd)  # closing the descriptor releases the flock

    def _sync_dir(self, directory: str) -> None:
        try:
            fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError:
            pass  # some filesystems refuse fsync on directories; the rename itself is still atomic
        finally:
            os.close(fd)

    def put(self, directory: str, path: str, data: bytes) -> None:
        tmp = self._stage(directory, data)
        try:
            with self._locked(directory, create=True):
                os.replace(tmp, path)
        except BaseException:
            _unlink_quietly(tmp)
            raise
        self._sync_dir(directory)

    @contextlib.contextmanager
    def _staged(self, directory: str, data: bytes) -> Iterator[str]:
        """``data`` in a staged temporary file, removed afterwards unless a link or rename consumed it."""
        tmp = self._stage(directory, data)
        try:
            yield tmp
        finally:
            _unlink_quietly(tmp)

    def put_if_absent(self, directory: str, path: str, data: bytes) -> bool:
        with self._staged(directory, data) as tmp:
            try:
                os.link(tmp, path)  # atomic: fails with EEXIST if any value is there
            except FileExistsError:
                return False
            except OSError as exc:
                if exc.errno not in _NO_HARDLINKS:
                    raise
                with self._locked(directory, create=True):  # filesystem without hard links
                    if os.path.lexists(path):
                        return False
                    os.replace(tmp, path)
        self._sync_dir(directory)
        return True

    def replace_if(self, directory: str, path: str, predicate: Callable[[bytes], bool], data: bytes) -> bool:
        """Under the namespace lock (which every delete and replace takes, and a create-exclusive link cannot
        win while the file exists): read, test, rename the new value over the old one."""
        with self._staged(directory, data) as tmp, self._locked(directory, create=False) as exists:
            raw = self.read(path) if exists else None
            if raw is None or not predicate(raw):
                return False
            os.replace(tmp, path)
        self._sync_dir(directory)
        return True

    def delete_if(self, directory: str, path: str, predicate: Callable[[bytes], bool] | None) -> bool:
        with self._locked(directory, create=False) as exists:
            if not exists:
                return False
            if predicate is not None:
                raw = self.read(path)
                if raw is None or not predicate(raw):
                    return False
            try:
                os.unlink(path)
            except FileNotFoundError:
                return False
        self._sync_dir(directory)
        return True


#: errno values meaning "this filesystem cannot create hard links" (FAT, some FUSE and SMB mounts)
_NO_HARDLINKS = {getattr(errno, n) for n in ("EPERM", "ENOTSUP", "EOPNOTSUPP", "EMLINK", "ENOSYS") if hasattr(errno, n)}


def _unlink_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


class _ArrowBackend:
    """Any ``pyarrow.fs`` filesystem. Whole-object PUTs are atomic on S3/GCS; conditionals are best-effort."""

    atomic_conditionals = False
    sep = "/"

    def __init__(self, filesystem: Any) -> None:
        from pyarrow import fs as pafs

        self._pafs = pafs
        self.fs = filesystem
        # S3 and GCS publish an object only when its upload completes; elsewhere write a temp file and move it
        self.direct_put = filesystem.type_name in ("s3", "gcs")
        self._made_dirs: set[str] = set()

    def read(self, path: str) -> bytes | None:
        try:
            with self.fs.open_input_stream(path) as f:
                return f.read()
        except FileNotFoundError:
            return None

    def names(self, directory: str) -> list[str]:
        selector = self._pafs.FileSelector(directory, allow_not_found=True, recursive=False)
        return [i.base_name for i in self.fs.get_file_info(selector) if i.type == self._pafs.FileType.File]

    def put(self, directory: str, path: str, data: bytes) -> None:
        if self.direct_put:
            with self.fs.open_output_stream(path) as f:
                f.write(data)
            return
        if directory not in self._made_dirs:
            self.fs.create_dir(directory, recursive=True)
            self._made_dirs.add(directory)
        tmp = f"{directory}/{TEMP_PREFIX}{uuid.uuid4().hex}"
        with self.fs.open_output_stream(tmp) as f:
            f.write(data)
        try:
            try:
                self.fs.move(tmp, path)
            except OSError:
                # HDFS (and some others) refuse to rename onto an existing file: replace it in two steps,
                # which leaves the key briefly absent (best-effort, as documented above)
                if self.fs.get_file_info(path).type == self._pafs.FileType.NotFound:
                    raise
                self.fs.delete_file(path)
                self.fs.move(tmp, path)
        except BaseException:
            with contextlib.suppress(Exception):
                self.fs.delete_file(tmp)
            raise

    def put_if_absent(self, directory: str, path: str, data: bytes) -> bool:
        if self.fs.get_file_info(path).type != self._pafs.FileType.NotFound:
            return False
        self.put(directory, path, data)
        return True

    def replace_if(self, directory: str, path: str, predicate: Callable[[bytes], bool], data: bytes) -> bool:
        raw = self.read(path)
        if raw is None or not predicate(raw):
            return False
        self.put(directory, path, data)
        return True

    def delete_if(self, directory: str, path: str, predicate: Callable[[bytes], bool] | None) -> bool:
        if predicate is not None:
            raw = self.read(path)
            if raw is None or not predicate(raw):
                return False
        try:
            self.fs.delete_file(path)
        except FileNotFoundError:
            return False
        return True


class FileSystemMetadataStore(MetadataStore):
    """A MetadataStore over a ``pyarrow.fs`` filesystem (local files use the POSIX fast path)."""

    def __init__(self, filesystem: Any, root: str, job_name: str, uri: str | None = None) -> None:
        from pyarrow import fs as pafs

        self.job_name = validate_job_name(job_name)
        self._raw_uri = uri or ""
        if isinstance(filesystem, pafs.LocalFileSystem):
            self._backend: _LocalBackend | _ArrowBackend = _LocalBackend()
            self.root = os.path.abspath(root)
            default_uri = "file://" + urllib.parse.quote(self.root)
        else:
            self._backend = _ArrowBackend(filesystem)
            self.root = root.rstrip("/")
            default_uri = f"{filesystem.type_name}://{self.root}"
        self.uri = redact_uri(uri) if uri else default_uri
        #: True when put_if_absent/delete_if_equal are atomic against other processes
        self.atomic_conditionals = self._backend.atomic_conditionals
        self._warned = False
        self._warned_foreign = False

    @classmethod
    def local(cls, path: str, job_name: str) -> FileSystemMetadataStore:
        """A store in local directory ``path`` (made absolute; created on first write)."""
        from pyarrow import fs as pafs

        path = os.path.abspath(path)
        return cls(pafs.LocalFileSystem(), path, job_name, uri="file://" + urllib.parse.quote(path))

    @classmethod
    def from_uri(cls, uri: str, job_name: str) -> FileSystemMetadataStore:
        """A store on whatever ``pyarrow.fs.FileSystem.from_uri(uri)`` opens (s3://, gs://, abfs://, hdfs:// ...)."""
        from pyarrow import fs as pafs
        from pyarrow.lib import ArrowException

        validate_job_name(job_name)
        try:
            filesystem, path = pafs.FileSystem.from_uri(uri)
        except (ArrowException, OSError, ValueError) as exc:
            raise errors.invalid_option(
                f"{OPTION} {redact_uri(uri)!r}: pyarrow.fs cannot open this filesystem "
                f"({type(exc).__name__}: {scrub_secrets(str(exc), uri, limit=300)}). Check the URI, its query "
                f"parameters and credentials. Supported forms: {SUPPORTED_FORMS}"
            ) from None
        return cls(filesystem, path, job_name, uri=uri)

    # -- paths and encoding -------------------------------------------------------------------------------
    def _join(self, *parts: str) -> str:
        sep = self._backend.sep
        return sep.join([self.root, *parts]) if self.root else sep.join(parts)

    def _dir(self, namespace: str) -> str:
        return self._join(self.job_name, validate_namespace(namespace))

    def _locate(self, namespace: str, key: Any) -> tuple[str, str, str]:
        key = str(key)
        directory = self._dir(namespace)
        return key, directory, directory + self._backend.sep + encode_key(key) + SUFFIX

    def _where(self, namespace: str, key: str) -> str:
        return f"key {key!r:.200} in namespace {namespace!r} of job {self.job_name!r} in metadata store {self.uri}"

    def _dump(self, namespace: str, key: str, value: JsonValue) -> bytes:
        return encode_envelope(key, value, self._where(namespace, key))

    def _load(self, namespace: str, key: str, path: str, raw: bytes) -> tuple[str, JsonValue]:
        """(stored key, value) of a file's bytes; MetadataStoreError for anything that is not our envelope."""
        return decode_envelope(raw, self._where(namespace, key), f"file {path}", "file")

    def _load_checked(self, namespace: str, key: str, path: str, raw: bytes) -> JsonValue:
        stored_key, value = self._load(namespace, key, path, raw)
        if stored_key != key:
            raise errors.metadata_value_invalid(
                f"corrupt value for {self._where(namespace, key)}: file {path} holds key {stored_key!r:.200} "
                "(was it renamed or copied by hand?). Delete that file or move it back"
            )
        return value

    @contextlib.contextmanager
    def _io(self, op: str, namespace: str, key: str | None) -> Iterator[None]:
        """Turn I/O failures into MetadataStoreError naming the store, the key and what to check."""
        try:
            yield
        except SamzaSourceError:
            raise
        except Exception as exc:
            if not _is_io_error(exc):
                raise
            what = self._where(namespace, key) if key is not None else (
                f"namespace {namespace!r} of job {self.job_name!r} in metadata store {self.uri}")
            raise errors.metadata_store_failed(
                f"{op} failed for {what}: {type(exc).__name__}: {scrub_secrets(str(exc), self._raw_uri)}. "
                f"Check that {self.root!r} is (or can be created as) a directory this process can write, "
                f"or point {OPTION} elsewhere"
            ) from exc

    def _warn_best_effort(self, op: str) -> None:
        if not self.atomic_conditionals and not self._warned:
            self._warned = True
            log.warning(
                "metadata store %s: %s (and the other conditional operations) are best-effort here: this "
                "filesystem offers no locks or conditional writes, so two concurrent writers may both "
                "succeed. Run a single writer per job, or use file: on a POSIX filesystem or dynamodb://",
                self.uri, op,
            )

    # -- MetadataStore ------------------------------------------------------------------------------------
    def get(self, namespace: str, key: str) -> JsonValue | None:
        key, _, path = self._locate(namespace, key)
        with self._io("get", namespace, key):
            raw = self._backend.read(path)
        return None if raw is None else self._load_checked(namespace, key, path, raw)

    def put(self, namespace: str, key: str, value: JsonValue) -> None:
        key, directory, path = self._locate(namespace, key)
        data = self._dump(namespace, key, value)
        with self._io("put", namespace, key):
            self._backend.put(directory, path, data)

    def put_if_absent(self, namespace: str, key: str, value: JsonValue) -> bool:
        key, directory, path = self._locate(namespace, key)
        data = self._dump(namespace, key, value)
        self._warn_best_effort("put_if_absent")
        with self._io("put_if_absent", namespace, key):
            return self._backend.put_if_absent(directory, path, data)

    def delete(self, namespace: str, key: str) -> None:
        key, directory, path = self._locate(namespace, key)
        with self._io("delete", namespace, key):
            self._backend.delete_if(directory, path, None)

    def delete_if_equal(self, namespace: str, key: str, expected: JsonValue) -> bool:
        key, directory, path = self._locate(namespace, key)
        self._warn_best_effort("delete_if_equal")

        def matches(raw: bytes) -> bool:
            return self._load_checked(namespace, key, path, raw) == expected

        with self._io("delete_if_equal", namespace, key):
            return self._backend.delete_if(directory, path, matches)

    def replace_if_equal(self, namespace: str, key: str, expected: JsonValue, value: JsonValue) -> bool:
        key, directory, path = self._locate(namespace, key)
        data = self._dump(namespace, key, value)
        self._warn_best_effort("replace_if_equal")

        def matches(raw: bytes) -> bool:
            return self._load_checked(namespace, key, path, raw) == expected

        with self._io("replace_if_equal", namespace, key):
            return self._backend.replace_if(directory, path, matches, data)

    def list(self, namespace: str) -> dict[str, JsonValue]:
        return self.scan(namespace).values_or_raise()

    def scan(self, namespace: str) -> StoreScan:
        directory = self._dir(namespace)
        found = StoreScan()
        with self._io("list", namespace, None):
            names = self._backend.names(directory)
        for name in names:
            if name.startswith(".") or not name.endswith(SUFFIX):
                continue  # temporary files, the lock file, editor backups
            stem = name[: -len(SUFFIX)]
            key = decode_name(stem)
            if key is None and not _is_hashed(stem):
                self._foreign(directory, name)
                continue
            path = directory + self._backend.sep + name
            with self._io("list", namespace, key if key is not None else stem):
                raw = self._backend.read(path)
            if raw is None:
                continue  # deleted since the listing
            try:
                stored_key, value = self._read_listed(namespace, key, stem, path, raw)
            except DAMAGE_ERRORS as exc:
                if not is_damage(exc):
                    raise
                found.damaged.append(DamagedRecord(namespace, key, f"file {path}", exc))
                continue
            found.values[stored_key] = value
        found.values = dict(sorted(found.values.items()))
        return found

    def _read_listed(self, namespace: str, key: str | None, stem: str, path: str,
                     raw: bytes) -> tuple[str, JsonValue]:
        """(key, value) of a listed file; the store's error for a file that is not the record its name says."""
        if key is not None:
            return key, self._load_checked(namespace, key, path, raw)
        stored_key, value = self._load(namespace, stem, path, raw)  # hashed name: the key lives in the envelope
        if hashed_name(stored_key) != stem:
            raise errors.metadata_value_invalid(
                f"corrupt value in namespace {namespace!r} of job {self.job_name!r} in metadata store "
                f"{self.uri}: file {path} holds key {stored_key!r:.200}, whose hashed name differs. "
                "Delete that file or move it back"
            )
        return stored_key, value

    def _foreign(self, directory: str, name: str) -> None:
        if not self._warned_foreign:
            self._warned_foreign = True
            log.warning("metadata store %s: ignoring %r in %s, which this store did not write", self.uri, name,
                        directory)


def _is_io_error(exc: BaseException) -> bool:
    if isinstance(exc, OSError):
        return True
    try:
        from pyarrow.lib import ArrowException
    except ImportError:  # pragma: no cover
        return False
    return isinstance(exc, ArrowException)


def encode_envelope(key: str, value: JsonValue, where: str, **extra: str) -> bytes:
    """The bytes the ``file:`` and ``s3://`` stores keep for ``key``: ``{"format": 1, "key": ..., "value": ...}``
    (and ``extra`` fields, e.g. the S3 store's writer id), compact and ASCII; a MetadataStoreError naming ``where``
    when ``value`` is not JSON."""
    try:
        text = json.dumps({"format": FORMAT_VERSION, "key": key, "value": value, **extra}, sort_keys=True,
                          allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise errors.metadata_value_not_storable(
            f"cannot store {where}: the value is not JSON ({exc}); store dicts with "
            "string keys, lists, strings, finite numbers, booleans or None"
        ) from None
    return text.encode("ascii")


def decode_envelope(raw: bytes, where: str, location: str, kind: str) -> tuple[str, JsonValue]:
    """(stored key, value) of a stored envelope ``{"format": 1, "key": ..., "value": ...}`` (the ``file:`` and
    ``s3://`` stores share the layout); a MetadataStoreError naming ``where`` (the key) and ``location`` (the file
    or object, a ``kind``) for anything else, a FormatVersionError for a newer format."""
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise errors.metadata_value_invalid(
            f"corrupt value for {where}: {location} is not valid JSON ({exc}). "
            f"Fix or delete that {kind} (or write the key again)"
        ) from None
    fmt = doc.get("format") if isinstance(doc, dict) else None
    if type(fmt) is not int or fmt < 1 or not isinstance(doc.get("key"), str) or "value" not in doc:
        raise errors.metadata_value_invalid(
            f"corrupt value for {where}: {location} is JSON but not a metadata "
            f'envelope {{"format": 1, "key": ..., "value": ...}}. Fix or delete that {kind}'
        )
    if fmt > FORMAT_VERSION:
        raise errors.format_version_unknown(
            f"{where} was written in format {fmt} by a newer spark-samza-source "
            f"(this one reads format {FORMAT_VERSION}); upgrade spark-samza-source"
        )
    return doc["key"], doc["value"]
