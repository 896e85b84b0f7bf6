"""How the ``y9`` CLI reports a failure: one sentence on stderr and a non-zero exit, never a traceback.

y9's own errors (:class:`~y9core.errors.Y9Error` and the ValueError/TypeError of argument checks) already
are one sentence. An ``OSError`` (a read-only folder, a file where a folder is expected, a full disk) is
turned into one here, naming the path and saying what is wrong in words. ``y9 --debug ...`` (or
``Y9_DEBUG=1``) shows the full traceback instead.
"""

from __future__ import annotations

import errno
import os

EXIT_ERROR = 2
EXIT_INTERRUPTED = 130

_REASONS = {
    errno.EACCES: "permission denied",
    errno.EPERM: "the operation is not permitted",
    errno.EROFS: "the file system is read-only",
    errno.ENOTDIR: "a part of that path is a file, not a folder",
    errno.EISDIR: "it is a folder, expected a file",
    errno.EEXIST: "a file of that name already exists where a folder is needed",
    errno.ENOENT: "no such file or folder",
    errno.ENAMETOOLONG: "the name is too long",
    errno.EMFILE: "too many files are open",
    errno.EIO: "an input/output error occurred (a failing disk or network mount)",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EFBIG: "the file would exceed the file-size limit (ulimit -f) or the file system's largest file",
}


def debug_requested(argv: list[str]) -> bool:
    """``--debug`` among the global options, or ``Y9_DEBUG`` set to something other than 0/empty."""
    return "--debug" in argv or os.environ.get("Y9_DEBUG", "") not in ("", "0")


def describe_os_error(exc: OSError) -> str:
    """One sentence for an OSError: the path(s) it names and what the error number means."""
    names = " -> ".join(str(n) for n in (exc.filename, exc.filename2) if n is not None)
    if exc.errno == errno.ENOSPC:
        where = f" while writing {names}" if names else " while writing"
        return f"the disk is full (no space left on device){where}; free some space and run again."
    if exc.errno is None or not names:
        text = str(exc).strip() or type(exc).__name__
        return text if text.endswith(".") else text + "."
    reason = _REASONS.get(exc.errno, (exc.strerror or os.strerror(exc.errno)).lower())
    return f"cannot use {names}: {reason} (errno {errno.errorcode.get(exc.errno, exc.errno)})."


def describe(exc: BaseException) -> str:
    """The sentence the CLI prints for ``exc``."""
    if isinstance(exc, OSError) and not _is_y9(exc):
        return describe_os_error(exc)
    text = str(exc).strip() or type(exc).__name__
    return text


def _is_y9(exc: BaseException) -> bool:
    from y9core.errors import Y9Error

    return isinstance(exc, Y9Error)


def describe_usage(exc) -> str:
    """One line for an option error of the command line (a click ``UsageError``): the command, what is wrong,
    where the options are listed."""
    ctx = getattr(exc, "ctx", None)
    where = ctx.command_path if ctx is not None else "y9"
    text = " ".join(exc.format_message().split()).rstrip(".")
    listed = f"the {'commands' if text.startswith('No such command') else 'options'} are listed by '{where} --help'."
    if text.endswith("?"):  # "Did you mean 'train', 'triton'?" ends its own sentence
        return f"{where}: {text} {listed[0].upper()}{listed[1:]}"
    return f"{where}: {text}; {listed}"
