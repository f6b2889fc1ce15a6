"""A client of the control API (`kgroup serve --control-listen`), one method per endpoint.

Blocking and standard library only (http.client, json), so it works from any test, any
thread and the CLI; from asyncio code call it through `asyncio.to_thread`. Every answer is
the endpoint's JSON as plain dicts and lists (docs/testing.md describes them); an error
answer raises `ControlError` with the status and the server's one-line reason, and a wait
that times out raises `GroupWaitTimeout` carrying the group as it was.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
from typing import Any
from urllib.parse import quote, urlencode

# How much longer than a wait's own timeout the HTTP request may take to come back.
WAIT_MARGIN_S = 10.0
# How long `wait_for_group` waits unless told: generous, as a test on a loaded machine needs
# (it returns as soon as the group is there; only a failing wait takes this long).
WAIT_DEFAULT_MS = 30_000
# A coordinator move and a node control (a start waits until the node serves) may take a while.
MOVE_TIMEOUT_S = 45.0
NODE_TIMEOUT_S = 90.0


class ControlError(Exception):
    """The control API refused a request (`status`, and its one-line `reason`)."""

    def __init__(self, status: int, reason: str, body: Any = None) -> None:
        super().__init__(f"{reason} (HTTP {status})")
        self.status = status
        self.reason = reason
        self.body = body


class GroupWaitTimeout(ControlError, TimeoutError):
    """The group did not reach the state asked for in time; `group` is how it was."""

    @property
    def group(self) -> dict[str, Any]:
        return self.body


class ControlClient:
    """The control API at `address` ("HOST:PORT")."""

    def __init__(self, address: str, timeout: float = 30.0) -> None:
        host, sep, port = address.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"control address must look like HOST:PORT, not {address!r}")
        self.address = address
        self.host, self.port = host.strip("[]"), int(port)
        self.timeout = timeout
        self._local = threading.local()   # one keep-alive connection per thread

    # ---- faults ---------------------------------------------------------------------------

    def add_fault(self, api: str, error: str | None = None, *, delay_ms: int | None = None,
                  close_connection: bool = False, group: str | None = None, member: str | None = None,
                  client_id: str | None = None, topic: str | None = None, partition: int | None = None,
                  count: int = 1, throttle_ms: int | None = None) -> str:
        """Arm a fault; returns its id. See docs/testing.md for what each field does."""
        spec: dict[str, Any] = {"api": api, "count": count}
        for name, value in (("error", error), ("delay_ms", delay_ms), ("group", group), ("member", member),
                            ("client_id", client_id), ("topic", topic), ("partition", partition),
                            ("throttle_ms", throttle_ms)):
            if value is not None:
                spec[name] = value
        if close_connection:
            spec["close_connection"] = True
        return self.request("POST", "/faults", spec)["id"]

    def faults(self) -> list[dict[str, Any]]:
        """The armed faults, each with `remaining` and `hits`."""
        return self.request("GET", "/faults")["faults"]

    def remove_fault(self, fault_id: str) -> None:
        self.request("DELETE", f"/faults/{quote(fault_id, safe='')}")

    def clear_faults(self) -> int:
        """Disarm every fault; returns how many there were."""
        return self.request("DELETE", "/faults")["deleted"]

    # ---- groups ---------------------------------------------------------------------------

    def group(self, group_id: str) -> dict[str, Any]:
        """The group now; raises ControlError (404) if it does not exist."""
        return self.request("GET", _group_path(group_id))

    def wait_for_group(self, group_id: str, state: str | None = None, members: int | None = None,
                       timeout_ms: int = WAIT_DEFAULT_MS) -> dict[str, Any]:
        """The group, as soon as it is in `state` with `members` members (either may be left
        out); raises GroupWaitTimeout (with the group as it was) after `timeout_ms`."""
        query = {"timeout_ms": timeout_ms}
        if state is not None:
            query["state"] = state
        if members is not None:
            query["members"] = members
        return self.request("GET", f"{_group_path(group_id)}/wait?{urlencode(query)}",
                            timeout=timeout_ms / 1000 + WAIT_MARGIN_S)

    def rebalance(self, group_id: str) -> dict[str, Any]:
        """Start a rebalance of the group now; returns the group."""
        return self.request("POST", f"{_group_path(group_id)}/rebalance")

    def expire_member(self, group_id: str, member: str) -> dict[str, Any]:
        """Expire a member (by member id or instance id) as its session timeout would; returns
        the group, with `expired` naming the member id."""
        return self.request("POST", f"{_group_path(group_id)}/members/{quote(member, safe='')}/expire")

    # ---- a cluster ------------------------------------------------------------------------

    def move_coordinator(self, group_id: str, node: int) -> dict[str, Any]:
        """Move the group's coordinator (its metadata partition) to `node` by a clean
        hand-over; returns the group as the new coordinator has it (Dead if it has no state)."""
        return self.request("POST", f"{_group_path(group_id)}/coordinator", {"node": node},
                            timeout=MOVE_TIMEOUT_S)

    def nodes(self) -> list[dict[str, Any]]:
        """Every node of the cluster: id, bootstrap, status, control address."""
        return self.request("GET", "/nodes")["nodes"]

    def kill_node(self, node: int) -> dict[str, Any]:
        """SIGKILL node `node` (through the process that started the nodes)."""
        return self.request("POST", f"/nodes/{int(node)}/kill", timeout=NODE_TIMEOUT_S)

    def stop_node(self, node: int) -> dict[str, Any]:
        """SIGTERM node `node`: it hands its partitions over and exits."""
        return self.request("POST", f"/nodes/{int(node)}/stop", timeout=NODE_TIMEOUT_S)

    def start_node(self, node: int) -> dict[str, Any]:
        """Start a stopped or killed node again; returns once it serves."""
        return self.request("POST", f"/nodes/{int(node)}/start", timeout=NODE_TIMEOUT_S)

    def pause_node(self, node: int, ms: int) -> dict[str, Any]:
        """Stop node `node` answering for `ms` (SIGSTOP, then SIGCONT); returns at once."""
        return self.request("POST", f"/nodes/{int(node)}/pause?ms={int(ms)}", timeout=NODE_TIMEOUT_S)

    # ---- this node ------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        return self.request("GET", "/status")

    # ---- plumbing -------------------------------------------------------------------------

    def request(self, method: str, path: str, body: Any = None, timeout: float | None = None) -> Any:
        """Send one request; the answer's JSON, or ControlError for an error status."""
        payload = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if payload is not None else {}
        for attempt in (1, 2):
            conn = self._connection(timeout)
            try:
                conn.request(method, path, body=payload, headers=headers)
                response = conn.getresponse()
                raw = response.read()
                break
            except (ConnectionError, http.client.BadStatusLine, http.client.CannotSendRequest) as exc:
                # A kept-alive connection the server closed meanwhile: one fresh try.
                self._drop()
                if attempt == 2 or isinstance(exc, ConnectionRefusedError):
                    raise ControlError(0, f"cannot reach the control API at {self.address}: {exc}") from None
            except (socket.timeout, OSError) as exc:
                self._drop()
                raise ControlError(0, f"no answer from the control API at {self.address}: {exc}") from None
        try:
            data = json.loads(raw) if raw else None
        except ValueError:
            data = None
        if response.status >= 400:
            reason = data.get("error") if isinstance(data, dict) else raw.decode(errors="replace").strip()
            cls = GroupWaitTimeout if response.status == 408 else ControlError
            raise cls(response.status, reason or f"HTTP {response.status}", data)
        return data

    def _connection(self, timeout: float | None) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        want = timeout if timeout is not None else self.timeout
        conn.timeout = want
        if conn.sock is not None:
            conn.sock.settimeout(want)
        return conn

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def close(self) -> None:
        self._drop()


def _group_path(group_id: str) -> str:
    return f"/groups/{quote(group_id, safe='')}"
