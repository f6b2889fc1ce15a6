"""Every failure becomes one line `kgroup: error: <what> — <fix>` and a non-zero status."""

from __future__ import annotations

import socket

import pytest

from kgroup.cli import main as cli_main
from kgroup.cli.errors import CliError, UsageError, error_line, format_error
from kgroup.client.errors import (
    BrokerError,
    KafkaConnectionError,
    RequestTimeout,
    UnsupportedApi,
    error_code,
    error_name,
)


def test_error_line_is_one_line_with_a_fix() -> None:
    line = error_line("topic 'x'\ndoes not exist", "create it")
    assert line == "kgroup: error: topic 'x' does not exist — create it"


def test_broker_errors_are_named_in_kafka_spelling() -> None:
    assert error_name(16) == "NOT_COORDINATOR"
    assert error_code("not_coordinator") == 16 == error_code("NOT_COORDINATOR")
    assert error_name(31999) == "UNKNOWN_ERROR_CODE_31999"
    exc = BrokerError(69, "describe group 'g'")
    line, code = format_error(exc)
    assert line.startswith("kgroup: error: describe group 'g': GROUP_ID_NOT_FOUND — ")
    assert code == 1


@pytest.mark.parametrize("exc, status", [
    (KafkaConnectionError("cannot connect to h:1: connection refused"), 1),
    (RequestTimeout("h:1 did not answer Metadata v12 within 1s"), 1),
    (UnsupportedApi("broker h:1 does not support ListGroups"), 1),
    (CliError("group 'g' does not exist", "check the name"), 1),
    (UsageError("bad"), 2),
    (RuntimeError("boom"), 1),
    (FileNotFoundError(2, "No such file or directory", "x.toml"), 1),
])
def test_format_error_gives_one_line_and_status(exc, status) -> None:
    line, code = format_error(exc)
    assert code == status
    assert "\n" not in line and line.startswith("kgroup: error: ") and " — " in line


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_main_reports_an_unreachable_broker_in_one_line(capsys) -> None:
    port = _closed_port()
    status = cli_main.main(["topics", "list", "--bootstrap-server", f"127.0.0.1:{port}",
                            "--request-timeout-ms", "2000"])
    err = capsys.readouterr().err
    assert status == 1
    assert err.strip().splitlines() == [err.strip()]
    assert f"127.0.0.1:{port}" in err and "Traceback" not in err


def test_keyboard_interrupt_exits_130_with_one_line(monkeypatch, capsys) -> None:
    async def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_main, "_run_client", interrupted)
    assert cli_main.main(["topics", "list"]) == 130
    assert capsys.readouterr().err == "kgroup: interrupted\n"


def test_internal_errors_do_not_leak_a_traceback(monkeypatch, capsys) -> None:
    async def broken(args):
        raise ZeroDivisionError("oops")

    monkeypatch.setattr(cli_main, "_run_client", broken)
    assert cli_main.main(["topics", "list"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1 and "ZeroDivisionError" in err


def test_serve_dispatches_to_the_broker(monkeypatch) -> None:
    seen = {}

    class FakeServer:
        @staticmethod
        def serve_main(args):
            seen["args"] = args
            return 0

    monkeypatch.setattr(cli_main.importlib, "import_module", lambda name: FakeServer)
    assert cli_main.main(["serve", "--listen", "127.0.0.1:9999", "--data-dir", "/tmp/d",
                          "--fsync", "interval:100"]) == 0
    args = seen["args"]
    assert (args.listen, args.data_dir, args.fsync, args.advertised, args.config) == (
        "127.0.0.1:9999", "/tmp/d", "interval:100", None, None)


def test_serve_without_the_broker_module_says_so(monkeypatch, capsys) -> None:
    def missing(name):
        raise ModuleNotFoundError(f"No module named {name!r}")

    monkeypatch.setattr(cli_main.importlib, "import_module", missing)
    assert cli_main.main(["serve"]) == 1
    err = capsys.readouterr().err
    assert "kgroup serve is not available" in err and err.count("\n") == 1
