"""``--command-config FILE``: client properties in Java's ``.properties`` format, as Kafka's
tools read them (``security.protocol=SASL_SSL``, ``sasl.mechanism=SCRAM-SHA-512``, ...).

The format: one ``key=value`` (or ``key: value``, or ``key value``) per line; ``#`` and ``!``
start comments; a line ending in an odd number of backslashes continues on the next;
``\\t``, ``\\n``, ``\\uXXXX`` and ``\\<char>`` escapes. Only the security settings of
``kgroup.client.security`` are taken (the client ignores nothing silently: an unknown key is
an error naming it); Java's ``sasl.jaas.config`` gives the user name and password.
"""

from __future__ import annotations

import re
from pathlib import Path

from kgroup.client.security import SECURITY_DEFAULTS, ClientSecurity, SecurityConfigError

from .errors import CliError

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2:i + 6]):
                out.append(chr(int(text[i + 2:i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    """Key and value of one logical line: the key ends at the first unescaped '=', ':' or
    white space; white space and one '=' or ':' after it are skipped."""
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=:" or ch.isspace():
            break
        i += 1
    key, rest = line[:i], line[i:].lstrip()
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip()
    return _unescape(key), _unescape(rest)


def parse_properties(text: str) -> dict[str, str]:
    """The key/value pairs of a ``.properties`` text."""
    props: dict[str, str] = {}
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        if (len(line) - len(line.rstrip("\\"))) % 2 == 1:
            pending += line[:-1]  # continued on the next line
            continue
        key, value = _split(pending + line)
        pending = ""
        props[key] = value
    if pending:
        key, value = _split(pending)
        props[key] = value
    return props


def read_command_config(path: str) -> dict[str, str]:
    """The client settings of a ``--command-config`` file; CliError for a missing file, an
    unknown key or a setting that cannot work."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise CliError(f"--command-config {path} does not exist", "check the path") from None
    except OSError as exc:
        raise CliError(f"cannot read --command-config {path}: {exc.strerror}", "check the path") from None
    props = parse_properties(text)
    unknown = sorted(k for k in props if k not in SECURITY_DEFAULTS)
    if unknown:
        hint = ("use ssl.ca.location with a PEM file" if any(k.startswith("ssl.truststore") or k.startswith("ssl.keystore")
                                                            for k in unknown)
                else "known: " + ", ".join(SECURITY_DEFAULTS))
        raise CliError(f"--command-config {path}: unknown setting {unknown[0]!r}", hint, code=2)
    try:
        ClientSecurity.from_settings(props)
    except SecurityConfigError as exc:
        raise CliError(f"--command-config {path}: {exc}", "fix the file", code=2) from None
    return props
