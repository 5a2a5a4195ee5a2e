"""User-facing input errors.

Every malformed input (config, override, trace, CSV) raises :class:`InputError`.
The CLI prints it as exactly one line on stderr and exits with code 2; no
traceback is shown. The message always names *where* (file, line, field),
*what was found* and *what is allowed*.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

EXIT_INPUT_ERROR = 2


class InputError(Exception):
    """A user input is malformed.

    Args:
        where: file, ``file:line`` and/or dotted field path the problem is at.
        found: what was found there (already formatted for humans).
        allowed: what would have been accepted (``None`` when ``found`` is a
            complete sentence that already says it).
    """

    def __init__(self, where: str, found: str, allowed: str | None = None):
        self.where = where
        self.found = found
        self.allowed = allowed
        # args are the constructor's, so ``type(e)(*e.args)`` (simpy re-raising a failed process's
        # exception, pickling across processes) rebuilds the same error; str() is the one line
        super().__init__(where, found, allowed)

    def __str__(self) -> str:
        return self.one_line()

    def one_line(self) -> str:
        if self.allowed is None:  # ``found`` is already a full sentence
            text = f"{self.where}: {self.found}"
        else:
            text = f"{self.where}: found {self.found}; allowed: {self.allowed}"
        return " ".join(text.split())  # guarantee a single line


class SimulationError(RuntimeError):
    """The simulation itself failed (deadlock, invariant violation).

    Not an input problem: reported with the stuck components, exit code 3.
    """


def check_writable_dir(path, flag: str = "--out") -> None:
    """Create directory ``path`` if needed and check that files can be written in it; otherwise raise
    :class:`InputError` naming ``flag`` -- before any work whose results would then be lost."""
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".t3sim-write-check-", dir=p)
        os.close(fd)
        os.unlink(probe)
    except FileExistsError:
        raise InputError(f"{flag} {path}", "a file (or a path through one)", "a directory t3sim can create and write in") from None
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise InputError(f"{flag} {path}", f"a directory that cannot be created or written ({why})",
                         "a directory t3sim can create and write in") from None
