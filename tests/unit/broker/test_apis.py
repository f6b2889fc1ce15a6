"""The broker's API tables: one entry per served API, a guard unless the API is open, and
no API number written anywhere in broker/ but as an `ApiKey` name (docs/architecture.md,
"Adding an API version")."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from kgroup.broker.apis import Api, Takes, compile_apis, served_ranges
from kgroup.broker.concerns import PREPARED_GUARDS, SERVED, TABLES
from kgroup.wire.api_keys import ApiKey
from kgroup.wire import is_flexible, request_class, response_class

BROKER = Path(__file__).resolve().parents[3] / "src" / "kgroup" / "broker"
ENTRIES = [api for table in TABLES for api in table]
# What every connection may send before anything else, as in Kafka: no ACL guards them.
OPEN = {ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE}


def test_every_served_api_has_exactly_one_entry() -> None:
    keys = [api.key for api in ENTRIES]
    assert len(keys) == len(set(keys)), sorted(k.kafka_name for k in keys if keys.count(k) > 1)
    assert list(SERVED) == sorted(keys)
    with pytest.raises(ValueError, match="listed twice"):
        served_ranges([ENTRIES[:1], ENTRIES[:1]])


def test_every_served_api_has_a_guard_unless_it_is_open() -> None:
    assert {api.key for api in ENTRIES if api.guard is None} == OPEN
    assert not set(PREPARED_GUARDS) & set(SERVED), "a served API takes its guard from its entry"


@pytest.mark.parametrize("api", ENTRIES, ids=lambda a: a.key.kafka_name)
def test_each_entry_is_within_what_kio_knows_and_names_a_method(api: Api) -> None:
    for version in range(api.min_version, api.max_version + 1):
        assert request_class(api.key, version) and response_class(api.key, version)
        is_flexible(api.key, version)
    for handler in (api.handler, api.kio_handler):
        if handler is not None:
            owner = handler.__qualname__.split(".")[0]
            assert owner[0].isupper() and "." in handler.__qualname__, handler


def test_the_compiled_routes_bind_every_handler_to_its_service() -> None:
    class Service:
        async def one(self, header, request): ...

        async def two(self, header, request, client_host): ...

    service = Service()
    routes = compile_apis([[Api(ApiKey.HEARTBEAT, 0, 4, Service.one, guard=None, edits=False),
                            Api(ApiKey.JOIN_GROUP, 0, 9, Service.two, guard=print, edits=True,
                                takes=Takes.CLIENT_HOST)]], [service])
    assert routes.handlers == {12: service.one, 11: service.two}
    assert routes.with_client_host == {11} and routes.open == {12} and routes.guards == {11: print}
    assert all(type(k) is int for k in routes.handlers)    # plain ints: the request path's lookups
    with pytest.raises(LookupError):
        compile_apis([[Api(ApiKey.HEARTBEAT, 0, 4, Service.one, guard=None, edits=False)]], [object()])


# ---- no bare API numbers in broker/ ------------------------------------------------------------

_NAMES = "|".join(sorted((k.kafka_name for k in ApiKey), key=len, reverse=True))
# "Fetch (api 1)", "ShareFetch (78)", "api 32", "apis 68, 69": numbers standing for APIs in text.
_TEXT = re.compile(rf"\b(?:{_NAMES})\s*\((?:api\s*)?\d+\b|\bapis?\s+\d+\b|\(api \d+\)", re.IGNORECASE)
_API_NAMES = {"api", "api_key", "key"}
_CLASS_OF = {"request_class", "response_class", "load_request_schema", "load_response_schema", "error_response"}


def _names_an_api(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id in _API_NAMES) or (
        isinstance(node, ast.Attribute) and node.attr in ("api_key",))


def _ints(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, (ast.Tuple, ast.Set, ast.List)):
        return bool(node.elts) and all(_ints(e) for e in node.elts)
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("frozenset", "set"):
        return bool(node.args) and _ints(node.args[0])
    return False


def bare_api_numbers(source: str) -> list[str]:
    """Where `source` writes an API as a number: compared with an api key, keying a table of
    handlers, asking kio for an API's class, or named so in a comment or docstring."""
    found = [f"text: {m.group(0)!r}" for m in _TEXT.finditer(source)]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_names_an_api(s) for s in sides) and any(_ints(s) for s in sides):
                found.append(f"line {node.lineno}: an api key compared with a number")
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in _CLASS_OF:
            if node.args and _ints(node.args[0]):
                found.append(f"line {node.lineno}: {ast.unparse(node.func)} of a numbered API")
        elif isinstance(node, ast.Dict):
            keys = [k for k in node.keys if k is not None]
            if len(keys) >= 2 and all(_ints(k) for k in keys) and all(
                    isinstance(v, (ast.Attribute, ast.Name)) for v in node.values):
                found.append(f"line {node.lineno}: a table keyed by numbers")
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id.startswith("WITH_")
                                                  for t in node.targets) and _ints(node.value):
            found.append(f"line {node.lineno}: a set of numbered APIs")
    return found


def test_the_check_catches_bare_api_numbers() -> None:
    for source in ('"""Fetch (api 1), v4-v18."""', "# ShareFetch (78) and ShareAcknowledge (79)",
                   "x = api_key == 18", "if header.api_key in (68, 69): pass",
                   "handlers = {0: dp.produce, 1: dp.fetch}", "cls = response_class(21, v)",
                   "WITH_CLIENT_HOST = frozenset({11, 68, 76})", "# the consumer protocol (apis 68, 69)"):
        assert bare_api_numbers(source), source
    for source in ("x = api_key == ApiKey.API_VERSIONS", "cls = response_class(header.api_key, v)",
                   "TOPIC, BROKER = 2, 4", "if error == 35: pass", '"""KIP-848, v1 adds regexes."""'):
        assert not bare_api_numbers(source), source


@pytest.mark.parametrize("path", sorted(BROKER.rglob("*.py")), ids=lambda p: str(p.relative_to(BROKER)))
def test_no_bare_api_number_in_the_broker(path: Path) -> None:
    found = bare_api_numbers(path.read_text())
    assert not found, f"{path.relative_to(BROKER)} names APIs by number (use ApiKey): {found}"
