"""Third-party plug-ins, found at the edges of the program and handed to the pure layers.

Assignors: every entry point of the `kgroup.assignors` group (a class, instantiated, or an
instance) is registered with `kgroup.assignors.registry`. Scanning entry points reads the
installed packages and imports their code, so it happens here, once per process, from the
places that start something (broker config, the client's Consumer, the lab's CLI and Spark
tasks), never inside core/, member/ or assignors/.
"""

from __future__ import annotations

import importlib.metadata
import logging

from kgroup.assignors import registry

log = logging.getLogger("kgroup.plugins")

_loaded = False


def load_assignor_plugins(*, again: bool = False) -> None:
    """Register the installed third-party assignors (once per process unless `again`)."""
    global _loaded
    if _loaded and not again:
        return
    _loaded = True
    eps = sorted(importlib.metadata.entry_points(group=registry.ENTRY_POINT_GROUP),
                 key=lambda ep: (ep.name, ep.value))
    for ep in eps:
        try:
            obj = ep.load()
            if isinstance(obj, type):
                obj = obj()
        except Exception:
            log.exception("assignor plug-in %s (%s) could not be loaded; skipped", ep.name, ep.value)
            continue
        registry.register(obj)
