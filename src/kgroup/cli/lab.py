"""``kgroup lab run SCENARIO``, ``kgroup lab sweep SWEEP`` and ``kgroup lab replay EVENTS``.

``run`` simulates one scenario's group here (no Spark); ``sweep`` expands a sweep file and
simulates its groups on Spark (``local[*]`` unless ``--master`` says otherwise). Both write
Parquet and a self-contained ``report.html`` into ``--out`` and print a comparison table.
``replay`` turns each group's recorded events (``__kgroup_events``, or a Kafka cluster's
history from ``kgroup lab import``) into a scenario and replays it as recorded and under
each ``--as`` variant, here or, with ``--master``, on Spark for many groups. ``import`` is in
``lab_import``.
Reading and writing files happens here: ``kgroup.lab`` itself is pure.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import threading
import sys
import time
from pathlib import Path
from collections.abc import Iterator
from typing import Any, TextIO

from kgroup.lab.report import comparison, fmt_value, render, shown_columns, stop_quantiles
import yaml

from kgroup.lab.recorded import group_ids, recording
from kgroup.lab.results import SUMMARY_COLUMNS, WINDOW_COLUMNS, simulate
from kgroup.lab.scenario import ScenarioError, parse_scenario, scenario_from_dict
from kgroup.lab.sweep import parse_sweep
from kgroup.plugins import load_assignor_plugins

from .errors import CliError

_TABLE = ("variant", "groups", "rebalances_mean", "moved_mean", "min_moved_mean", "unowned_partition_s_mean",
          "stop_s_total_mean", "converge_s_median", "double_ownership", "offset_regressions",
          "tasks_moved_mean", "restore_s_per_move_mean", "standby_promotions_mean", "standby_with_active")


def run_lab(args: Any, out: TextIO | None = None, err: TextIO | None = None) -> int:
    # The streams are looked up now, not bound at import: callers may have replaced them.
    out = out or sys.stdout
    err = err or sys.stderr
    load_assignor_plugins()
    try:
        if args.action == "run":
            return _run(args, out)
        if args.action == "replay":
            return _replay(args, out, err)
        if args.action == "import":
            from .lab_import import run_import

            return run_import(args, out, err)
        return _sweep(args, out, err)
    except ScenarioError as exc:
        raise CliError(str(exc), "fix the file; the scenario format is in examples/lab/README.md",
                       code=2) from None


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except FileNotFoundError:
        raise CliError(f"no such file: {path}", "check the path") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read {path}: {exc}", "give a readable YAML file") from None


def _out_dir(path: str) -> Path:
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise CliError(f"--out {path} is a file", "give a directory (it is created if missing)")
    out.mkdir(parents=True, exist_ok=True)
    return out


def _run(args: Any, out: TextIO) -> int:
    sc = parse_scenario(_read(args.scenario), source=args.scenario)
    if args.seed is not None:
        from dataclasses import replace
        sc = replace(sc, seed=args.seed)
    directory = _out_dir(args.out)
    started = time.perf_counter()
    result = simulate(sc, group=f"{sc.name}/seed={sc.seed}", variant=sc.name, record_timeline=True)
    took = time.perf_counter() - started
    summary = dict(result.summary)
    wrote = _write_tables(directory, [summary], result.windows)
    rows = comparison([summary])
    html = render(f"kgroup lab: {sc.name}", [summary], result.windows, {sc.name: result},
                  {sc.name: stop_quantiles([result])}, rows,
                  note=f"Scenario {args.scenario}, seed {sc.seed}, {sc.duration_s:g} simulated seconds.")
    (directory / "report.html").write_text(html)
    _print_table(rows, out)
    out.write(f"{result.summary['member_events']:,} member events in {took:.2f} s; "
              f"wrote {directory}/{wrote}report.html\n")
    return 0


def _sweep(args: Any, out: TextIO, err: TextIO) -> int:
    base = Path(args.sweep).parent
    sweep = parse_sweep(_read(args.sweep), source=args.sweep,
                        read=lambda p: _read(str(base / p)))
    directory = _out_dir(args.out)
    spark = _spark_session(args.master)
    started = time.perf_counter()
    err.write(f"lab: {len(sweep.groups)} groups in {len(sweep.variants)} variants on {args.master}\n")
    result = _sweep_on_spark(spark, sweep, directory, err, partitions=args.partitions)
    took = time.perf_counter() - started
    html = render(f"kgroup lab: {sweep.name}", result.summaries, result.windows, result.examples,
                  result.stops, result.comparison,
                  note=f"Sweep {args.sweep}: {result.groups} groups on {args.master}.")
    (directory / "report.html").write_text(html)
    _print_table(result.comparison, out)
    out.write(f"{result.groups} groups in {took:.1f} s; wrote {directory}/groups.parquet, "
              f"windows.parquet, comparison.parquet, report.html\n")
    return 0


@contextlib.contextmanager
def _cancel_on_ctrl_c(spark: Any) -> Iterator[threading.Event]:
    """Run a Spark job so that Ctrl-C cancels it quietly, then stop Spark.

    PySpark's own SIGINT handler raises KeyboardInterrupt in the middle of a py4j call,
    which leaves tracebacks from py4j and the JVM on the terminal. Here Ctrl-C silences
    Spark's log and cancels its jobs from another thread (the main one is inside the call);
    the job then fails, and the caller turns that into KeyboardInterrupt. A second Ctrl-C
    gives up at once.
    """
    interrupted = threading.Event()

    def cancel() -> None:
        try:
            spark.sparkContext.setLogLevel("OFF")
            spark.sparkContext.cancelAllJobs()
        except Exception:  # noqa: BLE001 - Spark going away anyway
            pass

    def on_sigint(signum: int, frame: Any) -> None:
        if interrupted.is_set():
            raise KeyboardInterrupt
        interrupted.set()
        threading.Thread(target=cancel, name="kgroup-lab-cancel", daemon=True).start()

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield interrupted
    finally:
        signal.signal(signal.SIGINT, previous)
        try:
            spark.stop()
        except Exception:  # noqa: BLE001 - the gateway may already be gone
            pass


def _sweep_on_spark(spark: Any, sweep: Any, directory: Path, err: TextIO, **options: Any) -> Any:
    """``lab_job.run_sweep`` with its progress on ``err``; Ctrl-C cancels the Spark jobs and
    stops the session (KeyboardInterrupt once it has)."""
    from kgroup.spark import lab_job

    with _cancel_on_ctrl_c(spark) as interrupted:
        try:
            result = lab_job.run_sweep(spark, sweep, str(directory), **options,
                                       progress=lambda line: (err.write(f"lab: {line}\n"), err.flush()))
        except Exception:
            if interrupted.is_set():
                raise KeyboardInterrupt from None
            raise
    if interrupted.is_set():
        raise KeyboardInterrupt
    return result


def _events(path: str) -> list[dict[str, Any]]:
    """Group events, one JSON object a line (a `kgroup consume --print-key` line works too)."""
    text = sys.stdin.read() if path == "-" else _read(path)
    events = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            try:
                event = json.loads(line.split("\t", 1)[1]) if "\t" in line else None
            except json.JSONDecodeError:
                event = None
        if not isinstance(event, dict):
            raise CliError(f"{path}:{number}: not a JSON group event", "give the values of __kgroup_events, "
                           "one JSON object a line (kgroup consume __kgroup_events --from-beginning)")
        events.append(event)
    return events


def _variant(spec: str) -> tuple[str, dict[str, Any]]:
    """``static=true,session_timeout_ms=10000`` -> (label, overrides)."""
    overrides = {}
    for part in spec.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise CliError(f"bad --as {spec!r}", "use --as KEY=VALUE[,KEY=VALUE...], e.g. --as static=true",
                           code=2)
        overrides[key.strip()] = yaml.safe_load(value)
    return spec, overrides


def _replay(args: Any, out: TextIO, err: TextIO) -> int:
    events = _events(args.events)
    groups = group_ids(events)
    if args.group is not None and args.group not in groups:
        raise CliError(f"no events of group {args.group!r} in {args.events}",
                       f"the file has {len(groups)} groups ({', '.join(groups[:5])})", code=2)
    chosen = [args.group] if args.group is not None else _replayable(events, groups, err)
    if not chosen:
        raise CliError(f"no group events in {args.events}", "give the output of `kgroup lab import` or "
                       "of `kgroup consume __kgroup_events --from-beginning`", code=2)
    variants = [("recorded", {})] + [_variant(v) for v in args.variant or []]
    directory = _out_dir(args.out)
    if args.master is not None:
        return _replay_on_spark(args, events, chosen, variants, directory, out, err)
    summaries, windows, examples, stops = [], [], {}, {}
    for group in chosen:
        for label, overrides in variants:
            rec = recording(events, group, overrides=overrides)
            sc = scenario_from_dict(rec.scenario, source=f"{group} as {label}")
            result = simulate(sc, group=f"{group}/{label}", variant=label, record_timeline=True)
            summaries.append(result.summary)
            windows += result.windows
            examples.setdefault(label, result)
            stops.setdefault(label, []).append(result)
    wrote = _write_tables(directory, summaries, windows)
    rows = comparison(summaries)
    note = _replay_note(events, chosen, args.events)
    title = f"kgroup lab: what if {chosen[0]}..." if len(chosen) == 1 else f"kgroup lab: what if {len(chosen)} groups..."
    (directory / "report.html").write_text(render(title, summaries, windows, examples,
                                                  {k: stop_quantiles(v) for k, v in stops.items()}, rows, note=note))
    _print_table(rows, out)
    if len(chosen) > 1:
        _print_groups(summaries, out)
    out.write(f"{note}\nwrote {directory}/{wrote}report.html\n")
    return 0


def _replayable(events: list[dict[str, Any]], groups: list[str], err: TextIO) -> list[str]:
    """The groups of the file that can be replayed (those with an assignment recorded)."""
    out = []
    for group in groups:
        try:
            recording(events, group)
        except ScenarioError as exc:
            err.write(f"kgroup: skipped {exc}\n")
            continue
        out.append(group)
    return out


_STORY_LINES = 10                    # members whose runs the note lists


def _replay_note(events: list[dict[str, Any]], chosen: list[str], source: str) -> str:
    if len(chosen) == 1:
        rec = recording(events, chosen[0])
        story = "; ".join(rec.story[:_STORY_LINES]) + ("; ..." if len(rec.story) > _STORY_LINES else "")
        return (f"Group {chosen[0]} replayed from {source}: {rec.members} members ({rec.restarts} joins taken "
                f"as restarts), {rec.rebalances} rebalances recorded by the broker. Replayed: {story}.")
    recs = [recording(events, g) for g in chosen]
    return (f"{len(chosen)} groups replayed from {source}: {sum(r.members for r in recs)} members, "
            f"{sum(r.rebalances for r in recs)} rebalances recorded by the broker.")


def _replay_on_spark(args: Any, events: list[dict[str, Any]], chosen: list[str],
                     variants: list[tuple[str, dict[str, Any]]], directory: Path, out: TextIO, err: TextIO) -> int:
    """Every (group, variant) as a group of a sweep, simulated on Spark (``lab_job``)."""
    from kgroup.lab.sweep import Sweep, SweepGroup

    groups = tuple(SweepGroup(f"{group}/{label}", label, recording(events, group, overrides=overrides).scenario)
                   for group in chosen for label, overrides in variants)
    for g in groups:
        scenario_from_dict(dict(g.scenario), source=f"{g.group} as {g.variant}")   # errors here, not in a task
    sweep = Sweep(f"replay of {args.events}", groups)
    spark = _spark_session(args.master)
    err.write(f"lab: {len(chosen)} groups in {len(variants)} variants on {args.master}\n")
    result = _sweep_on_spark(spark, sweep, directory, err)
    note = _replay_note(events, chosen, args.events)
    (directory / "report.html").write_text(render(f"kgroup lab: what if {len(chosen)} groups...", result.summaries,
                                                  result.windows, result.examples, result.stops,
                                                  result.comparison, note=note))
    _print_table(result.comparison, out)
    out.write(f"{note}\nwrote {directory}/groups.parquet, windows.parquet, comparison.parquet, report.html\n")
    return 0


def _spark_session(master: str) -> Any:
    try:
        from kgroup.spark import lab_job
        from kgroup.spark.setup import SparkSetupError, require_java
    except ImportError as exc:
        raise CliError(f"Spark is not installed ({exc})", "pip install 'kgroup[spark]'") from None
    try:
        require_java()
    except SparkSetupError as exc:
        raise CliError(str(exc), "install Java 17 (Debian: apt-get install openjdk-17-jre-headless) "
                       "or set JAVA_HOME to one") from None
    return lab_job.session(master)


def _print_groups(summaries: list[dict[str, Any]], out: TextIO) -> None:
    """Per group and variant: rebalances, partitions moved, unowned partition-seconds."""
    out.write("\ngroup/variant  rebalances  moved  unowned_partition_s\n")
    for s in summaries:
        out.write(f"{s['group']}  {s['rebalances']}  {s['moved']}  {s['unowned_partition_s']:.1f}\n")


def _print_table(rows: list[dict[str, Any]], out: TextIO) -> None:
    cols = [c for c in _TABLE if c == "variant" or c in shown_columns(rows)]
    cells = [[fmt_value(c, r.get(c)).replace("–", "-") for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    out.write("  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip() + "\n")
    for row in cells:
        out.write("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() + "\n")


def _write_tables(directory: Path, summaries: list[dict[str, Any]], windows: list[dict[str, Any]]) -> str:
    """groups.parquet and windows.parquet when pyarrow is installed (kgroup[spark]); the
    file names written, for the closing line. Without it the report is all there is."""
    if importlib.util.find_spec("pyarrow") is None:
        sys.stderr.write("kgroup: note: no pyarrow here, so no groups.parquet or windows.parquet "
                         "(pip install 'kgroup[spark]' for them)\n")
        return ""
    _write_parquet(directory / "groups.parquet", summaries, SUMMARY_COLUMNS)
    _write_parquet(directory / "windows.parquet", windows, WINDOW_COLUMNS)
    return "groups.parquet, windows.parquet, "


def _write_parquet(path: Path, rows: list[dict[str, Any]], columns: tuple[tuple[str, str], ...]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    types = {"string": pa.string(), "long": pa.int64(), "double": pa.float64(), "boolean": pa.bool_()}
    schema = pa.schema([(name, types[kind]) for name, kind in columns])
    table = pa.Table.from_pylist([{n: r.get(n) for n, _ in columns} for r in rows], schema=schema)
    tmp = path.with_suffix(".tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)
