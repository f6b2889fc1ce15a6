"""`Broker`: one `kgroup serve` for a test, with the control API at hand.

    with Broker() as broker:                       # a temp dir, free ports, ready to use
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, ...})
        broker.add_fault("Heartbeat", "REBALANCE_IN_PROGRESS", group="g", count=3)
        broker.wait_for_group("g", state="Stable", members=1)

Defaults suit tests rather than production: no initial rebalance delay (a group forms as
soon as its members join), and fsync=never (data survives the process being killed, not a
power cut) — both can be changed with `group=` and `settings=`.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from kgroup.testing.control import ControlClient
from kgroup.testing.handle import ControlMethods
from kgroup.testing.process import ServeProcess, write_config

TEST_SETTINGS = {"fsync": "never"}
TEST_GROUP_SETTINGS = {"initial_rebalance_delay_ms": 0}


class Broker(ControlMethods):
    """A broker process of its own; every control API call is a method here."""

    def __init__(self, data_dir: str | Path | None = None, *, settings: dict[str, Any] | None = None,
                 group: dict[str, Any] | None = None, host: str = "127.0.0.1") -> None:
        """`settings`: top-level TOML settings (README "Configuration"), `group`: the [group]
        table; both over the test defaults. Without `data_dir`, a temp dir removed at stop."""
        self._own_dir = data_dir is None
        self.dir = Path(tempfile.mkdtemp(prefix="kgroup-")) if data_dir is None else Path(data_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        config_path = self.dir / "kgroup.toml"
        write_config(config_path, {**TEST_SETTINGS, **(settings or {})}, {**TEST_GROUP_SETTINGS, **(group or {})})
        self.process = ServeProcess(self.dir / "data", config_path, self.dir / "broker.log", host)

    # ---- life cycle -----------------------------------------------------------------------

    def start(self, timeout: float = 60.0) -> "Broker":
        """Start (or start again, on the same ports and data) and wait until it serves."""
        self.process.start(timeout)
        return self

    def stop(self) -> int | None:
        """Stop gracefully (SIGTERM); returns the exit status. The data stays until `close`."""
        return self.process.stop()

    def kill(self) -> None:
        """Kill at once (SIGKILL), as a crash would; `start` brings it back on the same data."""
        self.process.kill()

    def restart(self, timeout: float = 60.0) -> "Broker":
        self.stop()
        return self.start(timeout)

    def close(self) -> None:
        """Stop and, if this handle made the data dir, remove it."""
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "Broker":
        return self.start() if not self.process.alive() else self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- where it is ----------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        """`bootstrap.servers` for clients."""
        return self.process.bootstrap

    @property
    def control_address(self) -> str:
        """HOST:PORT of its control API, for `kgroup control --control` or HTTP from any language."""
        return self.process.control_address

    @property
    def control(self) -> ControlClient:
        return self.process.control

    @property
    def data_dir(self) -> Path:
        return self.process.data_dir

    def log(self) -> str:
        """Everything the broker logged so far."""
        return self.process.log()

    def logs(self) -> dict[str, str]:
        return {"broker": self.log()}
