"""What security costs on the request path: heartbeats per broker CPU-second, A/B.

    .venv/bin/python bench/broker_security.py [--baseline OTHER_CHECKOUT] [--rounds 4]
        [--members 100] [--connections 16] [--window 64] [--seconds 5]

Sides, measured in interleaved rounds (each round starts a fresh broker per side, so a
noisy moment of the machine falls on every side alike):

- `baseline`: `kgroup serve` of another checkout (its `.venv/bin/kgroup`), e.g. the commit
  before security landed — given with --baseline; and `baseline authorizer`, the same with
  the authorizer's config, to compare a change's secured path with the one before it;
- `plain`: this tree, no [[listeners]] and no [auth] (must cost the same as the baseline);
- `authorizer`: this tree with `[auth] authorizer = true` and one ACL letting
  User:ANONYMOUS read the group, so every heartbeat goes through the secured path and its
  guard (the cost of enforcing ACLs).

The load is bench/broker_heartbeats.py's (a Stable group, pipelined Heartbeat v3). Prints
each round and the medians, and each side's ratio to the first.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
from pathlib import Path

import peers
from broker_heartbeats import measure

from kgroup.acl_bindings import AclBinding, AclOperation, AclPermission, PatternType, ResourceType
from kgroup.broker.security.acl_store import AclStore

AUTH = "[auth]\nauthorizer = true\n"


def _authorizer_data_dir() -> str:
    data = Path(tempfile.mkdtemp(prefix="kgroup-bench-acl-")) / "data"
    AclStore(data).add([AclBinding(ResourceType.GROUP, "hb-bench-", PatternType.PREFIXED, "User:ANONYMOUS", "*",
                                   AclOperation.READ, AclPermission.ALLOW)])
    return str(data)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--baseline", type=Path, default=None, help="another checkout with a .venv")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--members", type=int, default=100)
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--window", type=int, default=64)
    p.add_argument("--seconds", type=float, default=5.0)
    args = p.parse_args()
    base_cfg = peers.toml_config(fsync="never", initial_rebalance_delay_ms=0)
    # [auth] must follow the [group] table toml_config ends with; a TOML table is fine there.
    sides: list[tuple[str, dict]] = []
    if args.baseline is not None:
        sides.append(("baseline", {"config_text": base_cfg, "kgroup": args.baseline / ".venv" / "bin" / "kgroup"}))
    sides.append(("plain", {"config_text": base_cfg}))
    if args.baseline is not None:
        sides.append(("baseline authorizer", {"config_text": base_cfg + AUTH,
                                              "kgroup": args.baseline / ".venv" / "bin" / "kgroup"}))
    sides.append(("authorizer", {"config_text": base_cfg + AUTH}))
    per_cpu: dict[str, list[float]] = {name: [] for name, _ in sides}
    for r in range(args.rounds):
        # Each round starts with another side, so no side always runs first (or last).
        for name, kw in sides[r % len(sides):] + sides[:r % len(sides)]:
            data_dir = _authorizer_data_dir() if name.endswith("authorizer") else None
            b = peers.start_kgroup(data_dir=data_dir, **kw)
            try:
                _, cpu, errors = asyncio.run(measure(b, args.members, args.connections, args.window, args.seconds, 1))
            finally:
                b.stop()
            if errors:
                raise SystemExit(f"{name}: {errors} error responses")
            per_cpu[name] += cpu
            print(f"round {r + 1} {name}: {cpu[0]:,.0f} heartbeats per broker CPU-second", flush=True)
    first = statistics.median(per_cpu[sides[0][0]])
    print(f"\nheartbeats per broker CPU-second, median of {args.rounds} rounds")
    for name, _ in sides:
        med = statistics.median(per_cpu[name])
        print(f"  {name:<19} {med:>10,.0f}   x{med / first:.3f}")


if __name__ == "__main__":
    main()
