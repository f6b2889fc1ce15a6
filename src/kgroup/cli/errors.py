"""How the CLI reports a mistake: one line, ``kgroup: error: <what> — <how to fix>``.

``UsageError`` is what the argument parser raises instead of printing usage and exiting;
``CliError`` is for mistakes found while running a command. ``format_error`` turns any
exception into the one line, so ``main`` never lets a traceback through.
"""

from __future__ import annotations

PROG = "kgroup"


class CliError(Exception):
    """A user-facing failure with a fix; exit status ``code``."""

    def __init__(self, message: str, hint: str, code: int = 1) -> None:
        super().__init__(message)
        self.hint = hint
        self.code = code


class UsageError(CliError):
    """Bad command-line arguments (exit status 2)."""

    def __init__(self, message: str, hint: str = "run `kgroup --help`") -> None:
        super().__init__(message, hint, code=2)


def error_line(message: str, hint: str) -> str:
    """The one line printed to stderr."""
    message = " ".join(str(message).split()) or "unknown error"
    hint = " ".join(str(hint).split())
    return f"{PROG}: error: {message} — {hint}" if hint else f"{PROG}: error: {message}"


def format_error(exc: BaseException) -> tuple[str, int]:
    """(one line for stderr, exit status) for any exception a command can raise."""
    if isinstance(exc, CliError):
        return error_line(str(exc), exc.hint), exc.code
    # Imported here: nothing of the wire layer (kio) may load before `kgroup serve` decides
    # how it loads (main.run_serve).
    from kgroup.client.errors import KafkaClientError  # noqa: PLC0415
    from kgroup.wire.errors import WireError  # noqa: PLC0415

    if isinstance(exc, KafkaClientError):
        return error_line(str(exc), exc.hint), 1
    if isinstance(exc, WireError):
        return error_line(f"protocol error: {exc}", "check that the address is a Kafka broker"), 1
    if isinstance(exc, BrokenPipeError):
        return "", 0
    if isinstance(exc, OSError):
        what = exc.strerror or str(exc)
        where = f" ({exc.filename})" if exc.filename else ""
        return error_line(f"{what}{where}", "check the path and permissions"), 1
    name = type(exc).__name__
    return (
        error_line(f"internal error: {name}: {exc}", "please report this as a kgroup bug"),
        1,
    )
