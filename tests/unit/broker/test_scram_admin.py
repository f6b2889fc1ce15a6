"""AlterUserScramCredentials checked in Kafka's controller's order (ScramControlManager)."""

from __future__ import annotations

import asyncio

from kgroup.broker.config import AuthConfig
from kgroup.broker.security.security import Security
from kgroup.broker.security.security_api import SecurityApi
from kgroup.wire import RequestHeader, request_class
from kgroup.wire.kio_build import build, item

SHA256, SHA512 = 1, 2
NONE, UNACCEPTABLE, UNSUPPORTED_MECHANISM, NOT_FOUND, DUPLICATE = 0, 93, 33, 91, 92


def alter(api: SecurityApi, deletions=(), upsertions=()) -> dict[str, int]:
    cls = request_class(51, 0)
    request = build(cls, deletions=tuple(build(item(cls, "deletions"), name=n, mechanism=m) for n, m in deletions),
                    upsertions=tuple(build(item(cls, "upsertions"), name=n, mechanism=m, iterations=i,
                                           salt=b"s", salted_password=b"p") for n, m, i in upsertions))
    response = asyncio.run(api.alter_user_scram_credentials(RequestHeader(51, 0, 1, "t", True), request))
    return {r.user: int(r.error_code) for r in response.results}


def test_scram_alterations_are_checked_in_kafkas_order(tmp_path):
    api = SecurityApi(Security(AuthConfig(), str(tmp_path)))
    # A user's first refusal sticks: an unknown mechanism is not a duplicate.
    assert alter(api, deletions=[("a", 7), ("a", SHA256)], upsertions=[("b", -128, 4096)]) == {
        "a": UNSUPPORTED_MECHANISM, "b": UNSUPPORTED_MECHANISM}
    # An empty name is refused before anything else about it.
    assert alter(api, deletions=[("", 127), ("", 0)]) == {"": UNACCEPTABLE}
    # Named again after an accepted entry: a duplicate, and nothing of it is done.
    assert alter(api, upsertions=[("c", SHA256, 4096), ("c", SHA512, 4096)]) == {"c": DUPLICATE}
    assert alter(api, deletions=[("c", SHA256)]) == {"c": NOT_FOUND}
    # Kafka takes any salt and salted password; only the iterations are checked.
    assert alter(api, upsertions=[("d", SHA256, 4096), ("e", SHA256, 4095)]) == {"d": NONE, "e": UNACCEPTABLE}
