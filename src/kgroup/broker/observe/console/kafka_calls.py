"""The console's actions as Kafka requests, served by the broker's own request path.

An action (reset offsets, remove a member, delete a group) is the request a Kafka tool
sends for it (OffsetCommit, ListOffsets, LeaveGroup, DeleteGroups), built here and handed
to the same handler a client's request reaches. With an authorizer on, the API's own guard
decides first, as the principal the console authenticated (console/auth.py), so the console
can do exactly what that user could do with kafka-consumer-groups.sh, and no more.
"""

from __future__ import annotations

from typing import Any

from kgroup.broker.observe.console.auth import Actor
from kgroup.wire import RequestHeader, is_flexible, request_class
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.kio_build import build_request

CLIENT_ID = "kgroup-console"
CONNECTION = -1                    # no Kafka connection: handlers that key on one see this


class KafkaCalls:
    def __init__(self, requests: Any) -> None:
        self.requests = requests    # broker/requests.py RequestPath: guard and handler, as for a client

    async def __call__(self, actor: Actor, api: ApiKey, version: int, **fields: Any) -> Any:
        """The kio response to the request, as `actor` sending it would get it."""
        key = int(api)
        header = RequestHeader(key, version, 0, CLIENT_ID, is_flexible(key, version))
        request = build_request(request_class(key, version), **fields)
        return await self.requests.authorized(header, request, actor.principal, actor.host,
                                              f"/{actor.host}" if actor.host else "", CONNECTION, kio=True)
