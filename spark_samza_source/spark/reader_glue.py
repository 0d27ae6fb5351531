"""The once-marker of the test-only fault hooks (kept here until the hooks leave product code)."""

from __future__ import annotations

__all__ = ["claim_once"]


def claim_once(marker: str, line: str) -> bool:
    """Create ``marker`` holding ``line``; False when it exists already (another attempt fired first).

    The test-only fault hooks of both sources (``testing.failInReadOnce``, ``testing.failAfterRecord``) fire
    once per query across task retries and processes: the marker file is that "once".
    """
    import os

    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as out:
        out.write(line + "\n")
    return True
