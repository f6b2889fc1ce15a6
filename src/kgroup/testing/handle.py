"""What `Broker` and `Cluster` both offer: the control API's calls, and topics to test on."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Awaitable, Callable

from kgroup.testing.control import WAIT_DEFAULT_MS, ControlClient


class ControlMethods:
    """One method per control API endpoint, sent to `control` (a subclass provides it)."""

    @property
    def control(self) -> ControlClient:
        raise NotImplementedError

    @property
    def bootstrap(self) -> str:
        raise NotImplementedError

    def add_fault(self, api: str, error: str | None = None, **spec: Any) -> str:
        """Answer the next `count` (default 1) matching requests with `error`, or delay them
        (`delay_ms=`), or close the connection (`close_connection=True`), or throttle them
        (`throttle_ms=`: served, answered with that throttle time, the connection muted for
        it); match by `group`, `member`, `client_id`, `topic`, `partition`. Returns the
        fault's id."""
        return self.control.add_fault(api, error, **spec)

    def throttle_client(self, client_id: str, throttle_ms: int, api: str = "Produce", count: int = 1) -> str:
        """Throttle this client: its next `count` `api` requests are served, and answered as
        a client over its quota is (throttle_time_ms, then its connection muted that long)."""
        return self.control.add_fault(api, client_id=client_id, throttle_ms=throttle_ms, count=count)

    def faults(self) -> list[dict[str, Any]]:
        """The armed faults, each with `remaining` and `hits`."""
        return self.control.faults()

    def remove_fault(self, fault_id: str) -> None:
        self.control.remove_fault(fault_id)

    def clear_faults(self) -> int:
        return self.control.clear_faults()

    def group(self, group_id: str) -> dict[str, Any]:
        """Kind, state, protocol or assignor, generation or epochs, coordinator, members."""
        return self.control.group(group_id)

    def wait_for_group(self, group_id: str, state: str | None = None, members: int | None = None,
                       timeout_ms: int = WAIT_DEFAULT_MS) -> dict[str, Any]:
        """The group once it is in `state` with `members` members; GroupWaitTimeout if not in time."""
        return self.control.wait_for_group(group_id, state, members, timeout_ms)

    def rebalance(self, group_id: str) -> dict[str, Any]:
        """Start a rebalance now (classic: as a new member would; consumer protocol: a new
        group epoch)."""
        return self.control.rebalance(group_id)

    def expire_member(self, group_id: str, member: str) -> dict[str, Any]:
        """As if the member's (id or instance id) session had timed out."""
        return self.control.expire_member(group_id, member)

    def create_topic(self, name: str, partitions: int = 1) -> None:
        """Create a topic (through the Kafka API, as any admin client would)."""
        from kgroup.client.admin import AdminClient  # noqa: PLC0415 (the client only when used)

        async def create() -> None:
            async with AdminClient(self.bootstrap, client_id="kgroup-testing") as admin:
                await admin.create_topics({name: partitions})

        run_in_own_loop(create)


def run_in_own_loop(make: Callable[[], Awaitable[Any]]) -> Any:
    """Run a coroutine to completion on a loop of its own, in a thread of its own, so it
    works the same from plain and from asyncio tests."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = asyncio.run(make())
        except BaseException as exc:  # noqa: BLE001 (handed to the caller's thread)
            out["error"] = exc

    thread = threading.Thread(target=run, name="kgroup-testing")
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]
    return out.get("value")
