"""Who acts from the console: the principal an action is authorized as.

Reading the console (the page, /api GETs, /metrics) is open, as it always was: it shows what
the coordinator holds and changes nothing. An action (a POST) is done as a principal, with
the ACLs Kafka checks for the API it uses (console/kafka_calls.py):

- a broker with a SASL listener: the request carries HTTP Basic credentials, checked
  against the broker's own SCRAM credentials (as SASL/PLAIN checks them); the principal is
  `User:<name>`. Missing or wrong credentials: 401 and nothing is done.
- a broker without SASL: `User:ANONYMOUS`, the principal of a PLAINTEXT connection (so
  with `[auth] authorizer = true` the ACLs for ANONYMOUS decide, as for a client).

The console listener is plain HTTP: put it on loopback or behind TLS when passwords cross it.
An action must be sent as JSON (Content-Type: application/json): a browser does not send
that cross-site without a CORS preflight (which is never granted), so another site's page
cannot make a visitor's browser act here.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from kgroup.broker.http_server import Request, Response, json_response

ANONYMOUS = "User:ANONYMOUS"
REALM = 'Basic realm="kgroup console", charset="UTF-8"'


@dataclass(frozen=True, slots=True)
class Actor:
    principal: str
    host: str


def actor_of(request: Request, credentials, sasl: bool) -> Actor | Response:
    """The principal this request acts as, or the refusal to answer with."""
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        return json_response(415, {"error": "an action is sent as JSON (Content-Type: application/json)"})
    if not sasl:
        return Actor(ANONYMOUS, request.peer)
    user = _basic(request.headers.get("authorization", ""))
    if user is None or not credentials.check_plain(*user):
        # The page asks for the password itself (a browser's own prompt would block it).
        challenge = () if request.headers.get("x-kgroup-console") else (("WWW-Authenticate", REALM),)
        return Response(401, b'{"error":"sign in with a user of the broker (its SCRAM credentials)"}\n',
                        "application/json", challenge)
    return Actor(f"User:{user[0]}", request.peer)


def _basic(header: str) -> tuple[str, str] | None:
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user, sep, password = base64.b64decode(token.strip(), validate=True).decode("utf-8").partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return (user, password) if sep and user else None
