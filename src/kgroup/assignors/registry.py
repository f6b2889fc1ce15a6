"""Assignors by name: the built-ins, plus third-party ones registered at start-up.

A third-party package registers an assignor class or instance under the
`kgroup.assignors` entry-point group; the entry point's name is only a label, the object's
`name` attribute is what members ask for. Finding entry points reads installed packages and
imports their code, which a pure layer must not do: the edges (broker start-up, the client's
Consumer, the lab's CLI and Spark tasks) call `kgroup.plugins.load_assignor_plugins()`, which
hands each one to `register` here. Client-side assignors have `supported_protocols` (they
run in a classic-group leader); server-side ones do not. Built-in names cannot be
overridden by a plug-in.
"""

from __future__ import annotations

from typing import Any

from kgroup.assignors.interface import ClientAssignor, ServerAssignor
from kgroup.assignors.range import RangeAssignor
from kgroup.assignors.roundrobin import RoundRobinAssignor
from kgroup.assignors.server_range import ServerRangeAssignor
from kgroup.assignors.sticky import CooperativeStickyAssignor, StickyAssignor
from kgroup.assignors.uniform import UniformAssignor

ENTRY_POINT_GROUP = "kgroup.assignors"

_BUILTIN_CLIENT: dict[str, ClientAssignor] = {
    a.name: a for a in (RangeAssignor(), RoundRobinAssignor(), StickyAssignor(),
                        CooperativeStickyAssignor())
}
_BUILTIN_SERVER: dict[str, ServerAssignor] = {
    a.name: a for a in (UniformAssignor(), ServerRangeAssignor())
}
# Registered plug-ins, by name (the first registered under a name stays).
_PLUGIN_CLIENT: dict[str, ClientAssignor] = {}
_PLUGIN_SERVER: dict[str, ServerAssignor] = {}


class UnknownAssignor(KeyError):
    """No assignor of that name (built in or registered)."""


def register(assignor: Any) -> bool:
    """Make a third-party assignor (an instance) available by its `name`; False if it is not
    an assignor or its name is taken by a built-in or an earlier plug-in of its kind."""
    name = getattr(assignor, "name", None)
    if not isinstance(name, str) or not callable(getattr(assignor, "assign", None)):
        return False
    if hasattr(assignor, "supported_protocols"):
        builtin, plugins = _BUILTIN_CLIENT, _PLUGIN_CLIENT
    else:
        builtin, plugins = _BUILTIN_SERVER, _PLUGIN_SERVER
    if name in builtin or name in plugins:
        return False
    plugins[name] = assignor
    return True


def get_client_assignor(name: str) -> ClientAssignor:
    """The client-side assignor called `name` ("range", "roundrobin", "sticky", ...)."""
    found = _BUILTIN_CLIENT.get(name) or _PLUGIN_CLIENT.get(name)
    if found is None:
        raise UnknownAssignor(name)
    return found


def get_server_assignor(name: str) -> ServerAssignor:
    """The server-side assignor called `name` ("uniform", "range", ...)."""
    found = _BUILTIN_SERVER.get(name) or _PLUGIN_SERVER.get(name)
    if found is None:
        raise UnknownAssignor(name)
    return found


def client_assignor_names() -> tuple[str, ...]:
    """Every client-side assignor name, built-ins first."""
    return tuple(_BUILTIN_CLIENT) + tuple(sorted(_PLUGIN_CLIENT))


def server_assignor_names() -> tuple[str, ...]:
    """Every server-side assignor name, the default (`uniform`) first."""
    return tuple(_BUILTIN_SERVER) + tuple(sorted(_PLUGIN_SERVER))
