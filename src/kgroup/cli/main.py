"""``kgroup`` command line: ``serve``, ``cluster``, ``topics``, ``groups``, ``users``, ``acls``,
``tokens``, ``quotas``, ``client-metrics``, ``produce``, ``consume``, ``control``, ``lab``.

``main(argv)`` returns the exit status. Every mistake — bad arguments, a broker that cannot
be reached, an unknown topic or group, a broker error code — prints exactly one line
``kgroup: error: <what is wrong> — <how to fix>`` to stderr and returns non-zero (2 for
bad arguments, 1 otherwise); Ctrl-C prints ``kgroup: interrupted`` and returns 130, as a
shell reports SIGINT. No traceback reaches the user.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import sys
from typing import Any

from kgroup.client.kio_loading import kio_without_hypothesis

kio_without_hypothesis()    # before anything below loads kio

from .errors import CliError, format_error  # noqa: E402
from .parser import build_parser  # noqa: E402

__all__ = ["main", "run_serve"]


def run_serve(args: Any) -> int:
    """Hand ``kgroup serve`` to the broker (imported only when asked for)."""
    try:
        server = importlib.import_module("kgroup.broker.server")
        serve_main = server.serve_main
    except ImportError as exc:
        raise CliError(
            f"kgroup serve is not available: cannot import kgroup.broker.server ({exc})",
            "install a kgroup build that includes the broker",
        ) from None
    except AttributeError:
        raise CliError("kgroup serve is not available: kgroup.broker.server has no serve_main",
                       "install a kgroup build that includes the broker") from None
    result = serve_main(args)
    if inspect.isawaitable(result):
        result = asyncio.run(result)  # type: ignore[arg-type]
    return int(result or 0)


def _quiet_client_errors(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Drop the loop's reports of client errors nobody awaited (the answers still pending
    on a connection closed by Ctrl-C); anything else is reported as usual."""
    from kgroup.client.errors import KafkaClientError

    if isinstance(context.get("exception"), (KafkaClientError, asyncio.CancelledError)):
        return
    loop.default_exception_handler(context)


def _interrupted() -> int:
    try:
        sys.stderr.write("kgroup: interrupted\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    return 130


async def _run_client(args: Any) -> int:
    from kgroup.client.admin import AdminClient

    asyncio.get_running_loop().set_exception_handler(_quiet_client_errors)
    from .client_metrics import CLIENT_METRICS_COMMANDS
    from .commands import COMMANDS
    from .diagnosis import explained
    from .group_tools import GROUP_COMMANDS
    from .moves import MOVES_COMMANDS
    from .properties import read_command_config
    from .quotas import QUOTA_COMMANDS
    from .security import SECURITY_COMMANDS
    from .tokens import TOKEN_COMMANDS

    command = {**COMMANDS, **GROUP_COMMANDS, **SECURITY_COMMANDS, **TOKEN_COMMANDS, **MOVES_COMMANDS,
               **QUOTA_COMMANDS, **CLIENT_METRICS_COMMANDS}[(args.command, getattr(args, "action", None))]
    config = read_command_config(args.command_config) if args.command_config else None
    try:
        admin = AdminClient(args.bootstrap_server, timeout=args.request_timeout_ms / 1000, config=config)
    except ValueError as exc:
        raise CliError(f"bad --bootstrap-server: {exc}", "use HOST:PORT[,HOST:PORT...]",
                       code=2) from None
    protocol = str((config or {}).get("security.protocol", "PLAINTEXT"))
    try:
        return await explained(lambda: command(args, admin, sys.stdout), admin.connect,
                               args.bootstrap_server, protocol)
    finally:
        await admin.close()


def main(argv: list[str] | None = None) -> int:
    """Run the ``kgroup`` command line; returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
        if args.command == "serve":
            return run_serve(args)
        if args.command == "cluster":
            from .cluster import run_cluster
            return run_cluster(args)
        if args.command == "lab":
            from .lab import run_lab
            return run_lab(args)
        if args.command == "control":
            from .control import run_control
            return run_control(args, sys.stdout)
        if args.command == "users" and args.data_dir is not None:
            from .security import users_offline
            return users_offline(args, sys.stdout)
        return asyncio.run(_run_client(args))
    except KeyboardInterrupt:
        return _interrupted()
    except SystemExit as exc:  # --help, or a library calling sys.exit
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException as exc:  # noqa: BLE001 - the one place that turns errors into a line
        line, code = format_error(exc)
        if line:
            try:
                sys.stderr.write(line + "\n")
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
        return code


if __name__ == "__main__":
    sys.exit(main())
