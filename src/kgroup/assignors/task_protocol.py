"""The bytes of the ``kgroup-tasks`` protocol type (``kgroup.client.TaskAssignment``).

A member of any language joins such a group with JoinGroup protocol type ``kgroup-tasks``
and one protocol, ``sticky``, whose metadata is a task claim; the leader's SyncGroup hands
each member a task assignment. Kafka's primitive types, big-endian, not flexible:

    TaskClaim (JoinGroup member metadata)
      int16   version            1
      int32   generation         generation of the assignment the tasks come from, -1: none
      int8    running            1: the member still runs these tasks (it rebalances
                                 cooperatively); 0: it stopped them before rejoining (eager)
      int32   count, then count x string (int16 length + UTF-8)   the tasks

    TaskAssignment (SyncGroup member assignment)
      int16   version            1
      int32   count, then count x string                           the member's tasks

Empty assignment bytes mean no tasks (the coordinator sends them to a member the leader
left out). A newer version is read with the layout of version 1 and bytes after the known
fields are ignored, as Kafka's ConsumerProtocol does, so fields can be appended later.

A leader of another language must follow the cooperative rule of ``assignors.tasks``: never
give a task to a member while another member's claim says it still runs it.
"""

from __future__ import annotations

from collections.abc import Iterable

from kgroup.assignors.protocol_bytes import (
    I16,
    I32,
    ProtocolBytesError,
    Reader,
    write_strings,
)
from kgroup.assignors.tasks import TaskClaim

PROTOCOL_TYPE = "kgroup-tasks"
PROTOCOL_NAME = "sticky"
VERSION = 1


class TaskProtocolError(ProtocolBytesError):
    """The bytes are not a valid kgroup-tasks claim or assignment."""


def encode_claim(claim: TaskClaim) -> bytes:
    """TaskClaim bytes (the member metadata of a kgroup-tasks member)."""
    out = [I16.pack(VERSION), I32.pack(claim.generation), bytes([1 if claim.running else 0])]
    write_strings(sorted(claim.tasks), out, TaskProtocolError)
    return b"".join(out)


def decode_claim(data: bytes) -> TaskClaim:
    """Parse TaskClaim bytes; TaskProtocolError if they are not."""
    r = Reader(data, "task claim", TaskProtocolError)
    version = r.int16("version")
    if version < 1:
        raise TaskProtocolError(f"task claim: unsupported version {version}")
    generation = r.int32("generation")
    running = r.int8("running") != 0
    return TaskClaim(r.strings("tasks"), generation, running)


def encode_tasks(tasks: Iterable[str]) -> bytes:
    """TaskAssignment bytes (what the leader hands one member)."""
    out = [I16.pack(VERSION)]
    write_strings(sorted(tasks), out, TaskProtocolError)
    return b"".join(out)


def decode_tasks(data: bytes) -> tuple[str, ...]:
    """Parse TaskAssignment bytes (empty bytes: no tasks)."""
    if len(data) == 0:
        return ()
    r = Reader(data, "task assignment", TaskProtocolError)
    version = r.int16("version")
    if version < 1:
        raise TaskProtocolError(f"task assignment: unsupported version {version}")
    return r.strings("tasks")


def claim_protocols(held: bytes | None, previous: bytes | None,
                    generation: int) -> tuple[tuple[str, bytes], ...]:
    """The protocols a kgroup-tasks member joins with, from the assignment it holds (it
    runs those tasks) or, holding none, the last one it held (stopped: a claim for
    stickiness only). Unreadable assignment bytes claim nothing."""
    try:
        if held is not None:
            claim = TaskClaim(decode_tasks(held), generation, True)
        elif previous is not None:
            claim = TaskClaim(decode_tasks(previous), generation, False)
        else:
            claim = TaskClaim()
    except TaskProtocolError:
        claim = TaskClaim()
    return ((PROTOCOL_NAME, encode_claim(claim)),)
