"""Kafka's Uuid as text, as `Uuid.randomUuid().toString()` makes it.

A random (version 4) UUID in URL-safe base64 without padding, never the zero Uuid nor the
metadata topic's (1), and never starting with '-': Kafka redraws those, because a command-line
tool would read such an id (a client-metrics name, a member id, a cluster id) as an option.
Every id kgroup makes in that form comes from here.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable


def uuid_text(raw: bytes) -> str:
    """16 bytes as Kafka prints a Uuid."""
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def random_uuid_text(random_bytes: Callable[[int], bytes]) -> str:
    """A new Uuid's text from `random_bytes` (`os.urandom` at the edges: this leaf does no
    I/O), drawn again while it is 0, 1 or starts with '-'."""
    while True:
        raw = uuid.UUID(bytes=random_bytes(16), version=4)
        text = uuid_text(raw.bytes)
        if raw.int > 1 and not text.startswith("-"):
            return text
