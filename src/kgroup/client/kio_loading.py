"""Loading kio without hypothesis's strategies, for the command line and Spark's workers.

When hypothesis is installed (as in the test set-up), kio registers test-data strategies
for its types as they load: a third of a broker's start-up and ~0.2 s of every CLI command,
for nothing the command line uses. kio looks once, when `kio.static` loads; hypothesis is
given back right after, for whatever else imports it (a process that has hypothesis loaded
already, pytest's, keeps kio's strategies).
"""

from __future__ import annotations

import importlib
import sys


def kio_without_hypothesis() -> None:
    """Load kio's typing core with hypothesis hidden, unless either is loaded already."""
    if "hypothesis" in sys.modules or "kio" in sys.modules:
        return
    sys.modules["hypothesis"] = None  # type: ignore[assignment]
    try:
        importlib.import_module("kio.static.primitive")
    except ImportError:
        pass        # no kio: the command's own imports say what is missing
    finally:
        if sys.modules.get("hypothesis", 0) is None:
            del sys.modules["hypothesis"]
