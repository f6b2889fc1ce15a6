"""SCRAM credentials of the cluster, durable in the data dir (never a password).

How this works: `<data_dir>/security/scram-credentials.json` (a SharedJsonFile: changed
under a short flock, replaced atomically, mode 0600) maps each user to one stored credential
per SCRAM mechanism — salt, StoredKey, ServerKey, iterations:

    {"version": 1, "users": {"alice": {"SCRAM-SHA-512": {"salt": "<base64>",
        "stored_key": "<base64>", "server_key": "<base64>", "iterations": 8192}}}}

The broker keeps the decoded image and re-reads the file when another process changed it
(`refresh`, polled), so `kgroup users add --data-dir` (offline, to create the first admin)
and AlterUserScramCredentials on any node of a cluster reach every node. SASL/PLAIN checks
a password against the same credentials (`check_plain`). Salts come from `os.urandom`.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from kgroup.storage.errors import CorruptDataError
from kgroup.storage.shared_file import SharedJsonFile
from kgroup.wire.scram import (
    MECHANISMS,
    ScramCredential,
    ScramMechanism,
    make_credential,
    verify_password,
)

CREDENTIALS_FILE = Path("security") / "scram-credentials.json"
SALT_BYTES = 32

Credentials = dict[str, dict[ScramMechanism, ScramCredential]]


def _decode(doc: dict, path: Path) -> Credentials:
    if not doc:
        return {}
    try:
        if doc.get("version") != 1:
            raise ValueError(f"unknown version {doc.get('version')!r}")
        users: Credentials = {}
        for user, mechs in doc["users"].items():
            users[user] = {
                MECHANISMS[name]: ScramCredential(
                    salt=base64.b64decode(c["salt"], validate=True),
                    stored_key=base64.b64decode(c["stored_key"], validate=True),
                    server_key=base64.b64decode(c["server_key"], validate=True),
                    iterations=int(c["iterations"]))
                for name, c in mechs.items()}
        return users
    except (KeyError, TypeError, ValueError, AttributeError, binascii.Error) as exc:
        raise CorruptDataError(f"cannot read SCRAM credentials {path}: {exc}") from exc


def _encode(cred: ScramCredential) -> dict:
    return {"salt": base64.b64encode(cred.salt).decode(),
            "stored_key": base64.b64encode(cred.stored_key).decode(),
            "server_key": base64.b64encode(cred.server_key).decode(),
            "iterations": cred.iterations}


class CredentialStore:
    """The SCRAM credentials of every user (see the module comment)."""

    def __init__(self, data_dir: str | Path, *, random_bytes: Callable[[int], bytes] = os.urandom) -> None:
        self.file = SharedJsonFile(Path(data_dir) / CREDENTIALS_FILE, mode=0o600)
        self.random_bytes = random_bytes
        self.users: Credentials = _decode(self.file.read(), self.file.path)

    def refresh(self) -> bool:
        """Re-read the file if another process changed it; True if it was re-read."""
        if not self.file.changed():
            return False
        self.users = _decode(self.file.read(), self.file.path)
        return True

    # -- what SASL asks (kgroup.wire.sasl.Credentials) -----------------------------------

    def scram(self, mechanism: ScramMechanism, username: str) -> ScramCredential | None:
        return self.users.get(username, {}).get(mechanism)

    def check_plain(self, username: str, password: str) -> bool:
        """Whether ``password`` is the user's (checked against its strongest SCRAM credential)."""
        mechs = self.users.get(username)
        if not mechs:
            return False
        mechanism = max(mechs)
        return verify_password(mechanism, mechs[mechanism], password)

    # -- changes -------------------------------------------------------------------------

    def alter(self, upsertions: Iterable[tuple[str, ScramMechanism, ScramCredential]] = (),
              deletions: Iterable[tuple[str, ScramMechanism]] = ()) -> None:
        """Apply upsertions and deletions in one atomic change of the file."""
        with self.file.changing() as doc:
            doc.setdefault("version", 1)
            users = doc.setdefault("users", {})
            for user, mechanism in deletions:
                users.get(user, {}).pop(mechanism.sasl_name, None)
                if user in users and not users[user]:
                    del users[user]
            for user, mechanism, cred in upsertions:
                users.setdefault(user, {})[mechanism.sasl_name] = _encode(cred)
            self.users = _decode(doc, self.file.path)

    def set_password(self, username: str, mechanism: ScramMechanism, password: str, iterations: int) -> None:
        """Store a new credential for ``password`` with a fresh random salt."""
        cred = make_credential(mechanism, password, self.random_bytes(SALT_BYTES), iterations)
        self.alter(upsertions=[(username, mechanism, cred)])
