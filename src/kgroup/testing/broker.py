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

from pathlib import Path
from typing import Any

from kgroup.testing.control import ControlClient
from kgroup.testing.handle import ControlMethods
from kgroup.testing.lifecycle import ServerHandle
from kgroup.testing.process import ServeProcess, write_config

TEST_SETTINGS = {"fsync": "never"}
# No initial rebalance delay, and target assignments at once (KIP-1263's interval off, as the
# reference Kafka runs), so tests need not wait out a batch.
TEST_GROUP_SETTINGS = {"initial_rebalance_delay_ms": 0, "consumer_assignment_interval_ms": 0,
                       "share_assignment_interval_ms": 0}


class Broker(ServerHandle, ControlMethods):
    """A broker process of its own; every control API call is a method here."""

    def __init__(self, data_dir: str | Path | None = None, *, settings: dict[str, Any] | None = None,
                 group: dict[str, Any] | None = None, host: str = "127.0.0.1") -> None:
        """`settings`: top-level TOML settings (README "Configuration"), `group`: the [group]
        table; both over the test defaults. Without `data_dir`, a temp dir removed at stop."""
        self._take_dir(data_dir, "kgroup-")
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

    def alive(self) -> bool:
        return self.process.alive()

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
