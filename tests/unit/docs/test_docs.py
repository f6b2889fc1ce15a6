"""The design in the repo stays true: docs/protocol.md's table of served APIs is the broker's
tables, its key map is the codec's, the paths docs/architecture.md (and docs/group-kinds.md)
names exist, a newcomer
finds where to add an API version at the top of it, and nothing refers to a design file
outside the repository."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from kgroup.broker.apis import Takes
from kgroup.broker.concerns import TABLES
from kgroup.core import record_codec

REPO = Path(__file__).resolve().parents[3]
ARCHITECTURE = REPO / "docs" / "architecture.md"
PROTOCOL = REPO / "docs" / "protocol.md"
GROUP_KINDS = REPO / "docs" / "group-kinds.md"
SERVED_BEGIN, SERVED_END = "<!-- served-apis:begin -->", "<!-- served-apis:end -->"


def served_table() -> str:
    """docs/protocol.md's table, from the entries of every concern's apis.py."""
    lines = ["| API | key | versions | concern | handler | takes | edits |",
             "|---|---:|---|---|---|---|---|"]
    takes = {Takes.REQUEST: "", Takes.CLIENT_HOST: "client host", Takes.CONNECTION: "connection",
             Takes.PEER: "peer"}
    for api in sorted((a for table in TABLES for a in table), key=lambda a: a.key):
        module = api.handler.__module__.split(".")
        concern = f"{module[2]}/" if len(module) > 3 else "broker/"
        versions = str(api.min_version) if api.min_version == api.max_version else \
            f"{api.min_version}–{api.max_version}"
        lines.append(f"| {api.key.kafka_name} | {int(api.key)} | {versions} | `{concern}` | "
                     f"`{api.handler.__qualname__}` | {takes[api.takes]} | {'yes' if api.edits else ''} |")
    return "\n".join(lines)


def test_protocol_md_lists_every_api_and_version_served() -> None:
    text = PROTOCOL.read_text()
    shown = text.split(SERVED_BEGIN)[1].split(SERVED_END)[0].strip()
    expected = served_table()
    assert shown == expected, (
        "docs/protocol.md's table of served APIs is not the broker's tables; put this between "
        f"its {SERVED_BEGIN} and {SERVED_END} lines:\n\n{expected}\n")


def test_protocol_md_names_every_record_key_version() -> None:
    versions = {"OffsetCommitRecord": {0, record_codec.OFFSET_COMMIT_KEY_VERSION},
                "ClassicGroupRecord": {record_codec.GROUP_METADATA_KEY_VERSION},
                "GroupConfigRecord": {record_codec.GROUP_CONFIG_KEY_VERSION},
                "ShareStateRecord": {record_codec.SHARE_STATE_KEY_VERSION}}
    for table in (record_codec._CONSUMER_KEY_VERSIONS, record_codec._TXN_KEY_VERSIONS,
                  record_codec._SHARE_KEY_VERSIONS):
        versions.update({kind.__name__: {v} for kind, v in table.items()})
    rows = [line for line in PROTOCOL.read_text().splitlines() if line.startswith("| ") and "Record`" in line]
    documented: dict[str, set[int]] = {}
    for row in rows:
        first = row.split("|")[1]
        if "–" in first:
            lo, hi = (int(x) for x in first.split("–"))
            numbers = list(range(lo, hi + 1))
        else:
            numbers = [int(x) for x in re.findall(r"\d+", first)]
        names = re.findall(r"`(\w+Record)`", row)
        if len(names) == 1:
            documented[names[0]] = set(numbers)
        else:
            documented.update({name: {n} for name, n in zip(names, numbers)})
    assert documented == versions


def test_a_newcomer_finds_where_to_add_an_api_version_in_one_step() -> None:
    top = "\n".join(ARCHITECTURE.read_text().splitlines()[:8])
    assert "Adding an API version" in top and "apis.py" in top


def test_the_paths_architecture_md_names_exist() -> None:
    text = ARCHITECTURE.read_text() + PROTOCOL.read_text() + GROUP_KINDS.read_text()
    known = [str(p.relative_to(REPO)) for p in [*REPO.glob("src/**/*.py"), *REPO.glob("tests/**/*.py")]]
    missing = []
    for path in set(re.findall(r"`((?:src/kgroup/|tests/)?[\w/]+\.py)`", text)):
        # A whole path, or the tail of one (`broker/groups/shard.py`, `shard.py`).
        if not any(k == path or k.endswith("/" + path) for k in known):
            missing.append(path)
    assert not missing, f"the docs name modules that do not exist: {sorted(missing)}"


def test_nothing_refers_to_a_design_file_outside_the_repo() -> None:
    outside = ("DESIGN" + ".md", "PROTOCOL" + ".md", "/work/" + "shared")
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    found = []
    for name in files:
        path = REPO / name
        if not path.is_file() or path.suffix not in (".py", ".md", ".toml", ".txt", ".yaml", ".yml", ".cfg", ""):
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        found += [f"{name}: {word}" for word in outside if word in text]
    assert not found, found
    assert "docs/architecture.md" in (REPO / "README.md").read_text()
    assert "docs/protocol.md" in (REPO / "README.md").read_text()
