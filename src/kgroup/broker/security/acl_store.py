"""The cluster's ACLs, durable in the data dir.

How this works: `<data_dir>/security/acls.json` (a SharedJsonFile: changed under a short
flock, replaced atomically) lists every binding with Kafka's names:

    {"version": 1, "acls": [{"resource_type": "TOPIC", "resource_name": "orders",
        "pattern_type": "LITERAL", "principal": "User:alice", "host": "*",
        "operation": "READ", "permission": "ALLOW"}]}

The broker keeps the decoded AclSet and re-reads the file when another node changed it
(`refresh`, polled). CreateAcls and DeleteAcls change it under the lock, so two nodes
changing ACLs at once both land.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from kgroup.acl_bindings import AclOperation, AclPermission, PatternType, ResourceType
from kgroup.acl_bindings import AclBinding, AclFilter
from kgroup.core.acls import AclSet
from kgroup.storage.errors import CorruptDataError
from kgroup.storage.shared_file import SharedJsonFile

ACLS_FILE = Path("security") / "acls.json"


def _decode(doc: dict, path: Path) -> AclSet:
    if not doc:
        return AclSet()
    try:
        if doc.get("version") != 1:
            raise ValueError(f"unknown version {doc.get('version')!r}")
        return AclSet(frozenset(AclBinding(
            ResourceType[a["resource_type"]], str(a["resource_name"]), PatternType[a["pattern_type"]],
            str(a["principal"]), str(a["host"]), AclOperation[a["operation"]], AclPermission[a["permission"]],
        ) for a in doc["acls"]))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CorruptDataError(f"cannot read ACLs {path}: {exc}") from exc


def _encode(acls: AclSet) -> dict:
    return {"version": 1, "acls": [
        {"resource_type": b.resource_type.name, "resource_name": b.resource_name,
         "pattern_type": b.pattern_type.name, "principal": b.principal, "host": b.host,
         "operation": b.operation.name, "permission": b.permission.name}
        for b in sorted(acls.bindings)]}


class AclStore:
    """Every ACL binding (see the module comment)."""

    def __init__(self, data_dir: str | Path) -> None:
        self.file = SharedJsonFile(Path(data_dir) / ACLS_FILE)
        self.acls = _decode(self.file.read(), self.file.path)

    def refresh(self) -> bool:
        """Re-read the file if another process changed it; True if it was re-read."""
        if not self.file.changed():
            return False
        self.acls = _decode(self.file.read(), self.file.path)
        return True

    def add(self, bindings: Iterable[AclBinding]) -> None:
        """Add bindings (already validated); adding one that exists changes nothing."""
        with self.file.changing() as doc:
            acls = _decode(doc, self.file.path).adding(bindings)
            doc.clear()
            doc.update(_encode(acls))
        self.acls = acls

    def remove(self, filters: Iterable[AclFilter]) -> list[list[AclBinding]]:
        """Remove every binding each filter matches; per filter, what it removed."""
        removed: list[list[AclBinding]] = []
        with self.file.changing() as doc:
            acls = _decode(doc, self.file.path)
            for flt in filters:
                matched = acls.select(flt)
                removed.append(matched)
            acls = acls.removing(b for bs in removed for b in bs)
            doc.clear()
            doc.update(_encode(acls))
        self.acls = acls
        return removed
