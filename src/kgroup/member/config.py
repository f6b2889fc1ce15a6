"""Settings a group member needs, named after the Kafka consumer properties they mirror."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kgroup.assignors import COOPERATIVE, EAGER, ClientAssignor, get_client_assignor

CONSUMER_PROTOCOL_TYPE = "consumer"

# (held assignment or None, last assignment or None, its generation) -> protocols to offer
MetadataFor = Callable[[bytes | None, bytes | None, int], tuple[tuple[str, bytes], ...]]


@dataclass(frozen=True, slots=True)
class MemberConfig:
    """What a member is configured with (all times in milliseconds).

    ``assignors`` are client-side assignors, preferred first (``partition.assignment.strategy``):
    names of built-in or registered ones, or assignor objects (a custom ``ClientAssignor``).
    ``rebalance_timeout_ms`` is ``max.poll.interval.ms`` as in Kafka's Java client.
    ``server_assignor`` is what a consumer-protocol member asks the coordinator to assign
    with (None: the coordinator's default).

    ``protocol_type`` other than ``consumer`` makes a member of a group of that type (Kafka
    Connect's ``connect``, say): its metadata and assignments are opaque bytes, it has no
    assignors and never polls, and it rebalances as ``rebalance`` says (eager by default).

    ``metadata_for`` (another protocol type): a pure function giving the protocols to send
    with each JoinGroup from what the member holds — ``(held, previous, generation)``: the
    assignment held now (None if none), the last one it held, and that one's generation —
    as Kafka's AbstractCoordinator asks its subclass for metadata at every join. Without
    it, a member sends the protocols it was last given (``SetProtocols``).

    ``lose_before_expiry``: give up what the member holds (as lost) once the coordinator has
    gone unheard for nearly a session, before it could hand it to another member; what a
    ``Membership`` needs for "at most one leader at any time". Our consumer does not (yet):
    like Kafka's Java consumer it keeps its partitions until the coordinator says otherwise.
    """

    group_id: str
    group_instance_id: str | None = None          # group.instance.id
    session_timeout_ms: int = 45_000               # session.timeout.ms
    heartbeat_interval_ms: int = 3_000             # heartbeat.interval.ms
    max_poll_interval_ms: int = 300_000            # max.poll.interval.ms
    assignors: tuple[str | ClientAssignor, ...] = ("range", "cooperative-sticky")
    auto_commit: bool = True                       # enable.auto.commit
    retry_backoff_ms: int = 100                    # retry.backoff.ms
    server_assignor: str | None = None             # group.remote.assignor (consumer protocol)
    protocol_type: str = CONSUMER_PROTOCOL_TYPE    # JoinGroup protocol type
    rebalance: str | None = None                   # EAGER or COOPERATIVE (other protocol types)
    lose_before_expiry: bool = False               # see ClassicMemberMachine: "Losing before..."
    metadata_for: MetadataFor | None = None        # other protocol types: metadata per join

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def rebalance_timeout_ms(self) -> int:
        return self.max_poll_interval_ms

    def client_assignor(self, name: str) -> ClientAssignor:
        """The configured assignor object called ``name``, else the registry's."""
        for entry in self.assignors:
            if not isinstance(entry, str) and entry.name == name:
                return entry
        return get_client_assignor(name)

    @property
    def rebalance_protocol(self) -> str:
        """COOPERATIVE when every configured assignor supports it, else EAGER (KIP-429);
        for another protocol type, ``rebalance`` (EAGER when unset)."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return self.rebalance or EAGER
        assignors = [self.client_assignor(a if isinstance(a, str) else a.name)
                     for a in self.assignors]
        if all(COOPERATIVE in a.supported_protocols for a in assignors):
            return COOPERATIVE
        return EAGER
