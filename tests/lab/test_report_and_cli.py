"""``kgroup lab run`` end to end: Parquet, and a report that really renders in Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from kgroup.cli.main import main
from kgroup.lab.report import comparison, render, stop_quantiles
from tests.lab.labctx import run, scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "lab"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def rendered_dom(html_file: Path, tmp_path: Path) -> str:
    """The report's DOM after its scripts ran, from headless Chromium."""
    assert CHROMIUM, "headless Chromium is needed (make test installs Debian's chromium)"
    out = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'chromium'}", "--window-size=1280,800", "--virtual-time-budget=5000",
         "--dump-dom",
         html_file.as_uri()],
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def test_lab_run_writes_parquet_and_a_report_whose_plots_render(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["lab", "run", str(EXAMPLES / "rolling-bounce.yaml"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "rolling-bounce" in printed and "double_ownership" in printed
    groups = pq.read_table(out / "groups.parquet").to_pylist()
    windows = pq.read_table(out / "windows.parquet").to_pylist()
    assert len(groups) == 1 and groups[0]["members"] == 20 and groups[0]["double_ownership"] == 0
    assert len(windows) == 20 and all(w["kind"] == "bounce" for w in windows)
    dom = rendered_dom(out / "report.html", tmp_path)
    plots = int(re.search(r'data-plots="(\d+)"', dom).group(1))
    assert plots == 4                                 # timeline, two downtime plots, moved
    assert re.search(r'data-plots-rendered="(\d+)"', dom).group(1) == str(plots)
    assert dom.count('data-rendered="yes"') == plots
    marks = [int(m) for m in re.findall(r'data-marks="(\d+)"', dom)]
    assert len(marks) == plots and min(marks) >= 1 and marks[0] >= 20   # a bar per member at least


def test_a_report_with_an_empty_plot_is_not_taken_for_rendered(tmp_path):
    result = run(scenario(events=[]))
    html = render("empty", [result.summary], [], {}, {"t": None}, comparison([result.summary]))
    page = tmp_path / "r.html"
    page.write_text(html)
    dom = rendered_dom(page, tmp_path)
    plots = int(re.search(r'data-plots="(\d+)"', dom).group(1))
    assert int(re.search(r'data-plots-rendered="(\d+)"', dom).group(1)) < plots


def test_stop_quantiles_cover_every_member():
    result = run(scenario(events=[{"bounce": {"at_s": 60, "member": 1}}]))
    q = stop_quantiles([result])
    assert len(result.stop_s) == 6 and q[0] >= 0 and q[4] == max(result.stop_s.values())


def kgroup(*args: str) -> subprocess.CompletedProcess:
    exe = str(Path(sys.executable).with_name("kgroup"))
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=120)


def test_a_bad_scenario_gets_one_line_saying_what_to_fix(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("members: {count: 3, protocol: kraft}\n")
    out = kgroup("lab", "run", str(bad), "--out", str(tmp_path / "o"))
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert "bad.yaml: members: protocol must be classic or consumer" in out.stderr
    missing = kgroup("lab", "run", str(tmp_path / "nope.yaml"), "--out", str(tmp_path / "o"))
    assert missing.returncode == 1 and "no such file" in missing.stderr and "Traceback" not in missing.stderr
    no_out = kgroup("lab", "run", str(bad))
    assert no_out.returncode == 2 and "--out" in no_out.stderr


def screenshot(html_file: Path, png: Path, tmp_path: Path) -> None:
    """A full-page picture of the report, kept in the test's output directory."""
    out = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         f"--user-data-dir={tmp_path / 'chromium-shot'}", "--window-size=1280,3600", f"--screenshot={png}",
         html_file.as_uri()], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and png.stat().st_size > 10_000, out.stderr[-2000:]


def test_the_report_reads_at_a_glance(tmp_path):
    bounce = [{"bounce": {"at_s": 60, "member": 1, "down_s": 5}}]
    results = {}
    for variant, members in (("eager", {"assignor": "range"}), ("cooperative", {"assignor": "cooperative-sticky"}),
                             ("static", {"static": True})):
        results[variant] = run(scenario(events=bounce, members={**members, "state_bytes_per_partition": 2_000_000}),
                               group=f"g-{variant}", variant=variant, record_timeline=True)
    summaries = [r.summary for r in results.values()]
    rows = comparison(summaries)
    html = render("glance", summaries, [w for r in results.values() for w in r.windows], results,
                  {v: stop_quantiles([r]) for v, r in results.items()}, rows)
    page = tmp_path / "report.html"
    page.write_text(html)
    screenshot(page, tmp_path / "report.png", tmp_path)
    dom = rendered_dom(page, tmp_path)
    # Headings fit their cells: measured on the page Chromium laid out.
    assert int(re.search(r'data-header-cells="(\d+)"', dom).group(1)) > 20
    assert re.search(r'data-header-overlaps="(\d+)"', dom).group(1) == "0"
    # At 1280 px every table fits the page (nothing scrolls sideways) and every bar of
    # "partitions moved against the minimum" shows, a minimum of 0 included (static's).
    assert re.search(r'data-wide-tables="(\d+)"', dom).group(1) == "0"
    assert int(re.search(r'data-bars="(\d+)"', dom).group(1)) == 6
    assert float(re.search(r'data-min-bar-height="([\d.]+)"', dom).group(1)) >= 3
    # A written takeaway first, with the numbers of the table.
    eager, coop, static = (results[v].summary for v in ("eager", "cooperative", "static"))
    takeaway = re.search(r'<p class="takeaway"><b>Takeaway.</b> (.*?)</p>', dom).group(1)
    assert f"static moved 0 partitions where eager moved {eager['moved']:,}" in takeaway
    assert dom.index('class="takeaway"') < dom.index("<h2>Comparison</h2>")
    # Counts without decimals, bytes with units.
    table = dom[dom.index("<h2>Comparison</h2>"):dom.index("<h2>Ownership timeline</h2>")]
    assert f"<td>{eager['moved']:,}</td>" in table and ".00<" not in table
    assert re.search(r"<td>\d+(\.\d)? (MB|GB)</td>", table)
    # One group per variant: its distribution is a number, not a flat box.
    unowned = dom[dom.index("Unowned partition-seconds per group"):]
    assert unowned.count('class="mark value"') == 3
    # Eager stops every member at once; cooperative and static keep most of them working.
    timelines = re.findall(r'aria-label="Ownership through a rebalance: (\w+)".*?</svg>', dom, re.S)
    gaps = {name: len(re.findall(r'class="mark gap"', svg))
            for name, svg in zip(timelines, re.findall(r'(<svg[^>]*aria-label="Ownership.*?</svg>)', dom, re.S))}
    assert gaps["eager"] >= 6 and gaps["cooperative"] < gaps["eager"] and gaps["static"] <= 2, gaps
