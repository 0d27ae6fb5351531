"""Decoding the JSON this package stores (offsets, job models, checkpoints) with only its own errors escaping.

Offsets come back from Spark's checkpoint and job models and checkpoints from the metadata store, where anyone
may have edited or damaged them; every decoder turns whatever went wrong into the error its callers handle
(and the fuzz tests check), never a bare ``KeyError`` or ``JSONDecodeError``. Used by ``core/``, ``kafka/driver/offset``
and ``kinesis/driver/offset``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from . import errors
from .errors import FormatVersionError, SamzaSourceError

T = TypeVar("T")

#: what a decoder of untrusted JSON values may raise while it walks a value of the wrong shape
DECODING_ERRORS = (SamzaSourceError, KeyError, TypeError, ValueError, AttributeError, IndexError, ArithmeticError,
                   RecursionError)


def loads(text: str | bytes, error: Callable[[str], Exception], what: str) -> Any:
    """``json.loads(text)``; text that is not JSON raises ``error("<what> is not valid JSON: ...")``: ``error``
    is the catalogue function of the caller's error (``errors.checkpoint_invalid``), so the error has its
    condition."""
    try:
        return json.loads(text)
    except (TypeError, ValueError, RecursionError) as err:
        raise error(f"{what} is not valid JSON: {err!s:.200}") from None


def decode_offset(parse: Callable[[Any], T], value: Any, *, source: str,
                  keep: tuple[type[Exception], ...] = (FormatVersionError,)) -> T:
    """``parse(value)`` for an offset of ``source``: ``keep`` errors pass as they are, anything else becomes an
    :class:`OffsetFormatError` saying the offset is not this source's or is damaged."""
    try:
        return parse(value)
    except keep:
        raise
    except DECODING_ERRORS as err:
        raise errors.offset_invalid(
            f"this offset was not written by the {source} source or is damaged ({err!s:.300}); "
            "use a new checkpoint location for a query that used another source"
        ) from None
