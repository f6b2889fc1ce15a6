"""The web console in headless Chromium with a real broker and real kafka-python consumers:
the page lists the group, its grid shows each partition's owner, a member joining shows up
by itself (pushed, no reload) within 2 s of the broker seeing it, and the rebalance it
causes appears on the timeline. Screenshots are saved in the test's tmp dir."""

from __future__ import annotations

import json
import re
import urllib.request

import pytest

from tests.integration.broker_process import BrokerProcess, free_port
from tests.integration.cdp import Browser
from tests.integration.clients import ConsumerThread, create_topic, wait_for

pytestmark = pytest.mark.integration

GROUP = "shop-g"
COMPACT = (",", ":")                    # as JSON.stringify writes
MEMBERS = "[...document.querySelectorAll('#members tbody tr')]"
GRID = "[...document.querySelectorAll('#grid tbody tr')]"


def api(base: str, path: str) -> dict:
    return json.loads(urllib.request.urlopen(base + path, timeout=10).read())


def test_the_console_shows_a_live_group_its_owners_a_joining_member_and_the_rebalance(tmp_path):
    from confluent_kafka import Producer

    broker = BrokerProcess(tmp_path / "data", extra={"http_listen": f"127.0.0.1:{free_port()}"}).start()
    base = re.search(r"web console and metrics on (http://\S+/)", broker.log()).group(1)
    consumers: list[ConsumerThread] = []
    browser = None
    try:
        create_topic(broker.bootstrap, "shop", 4)
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        for i in range(40):
            producer.produce("shop", str(i).encode(), partition=i % 4)
        producer.flush(10)
        alpha = ConsumerThread("kafka-python", broker.bootstrap, GROUP, "shop", "alpha")
        consumers.append(alpha)
        alpha.start()
        wait_for(lambda: len(alpha.tally.consumed) == 40, 40, what="alpha read everything")
        alpha.commit_now()
        alpha_id = next(m["member_id"] for m in api(base, f"api/groups/{GROUP}")["members"])

        browser = Browser(tmp_path / "chromium")
        browser.open(f"{base}#group={GROUP}")
        # The list has the group; the grid has every partition, each owned by alpha.
        browser.wait(f"document.querySelector('#groups tr[data-group=\"{GROUP}\"]') !== null", "the group in the list")
        owners = browser.wait(f"{GRID}.length === 4 && {GRID}.map(r => [r.dataset.partition, r.dataset.owner, "
                              "r.querySelectorAll('td.owned').length])", "the assignment grid")
        assert owners == [[f"shop:{p}", alpha_id, 1] for p in range(4)]
        state = browser.js(f"document.querySelector('#groups tr[data-group=\"{GROUP}\"]').innerText")
        assert "Stable" in state and "classic" in state
        browser.wait("document.querySelector('#lag-chart').dataset.series === '1'", "one lag line: alpha's")
        browser.screenshot(tmp_path / "console-one-member.png")

        browser.js("window.__notReloaded = true")
        rebalances_before = browser.js("document.querySelectorAll('#rebalances tbody tr').length")
        beta = ConsumerThread("kafka-python", broker.bootstrap, GROUP, "shop", "beta")
        consumers.append(beta)
        beta.start()
        # beta appears in the members table by itself.
        shown = browser.wait(f"(() => {{ const r = {MEMBERS}.find(r => r.dataset.member.startsWith('beta-'));"
                             " return r && [r.dataset.member, Number(r.dataset.shownAt)]; })()",
                             "beta in the members table", timeout=30)
        beta_id, shown_at = shown
        assert browser.js("window.__notReloaded === true")              # pushed, not reloaded
        joined_ms = next(m["joined_ms"] for m in api(base, f"api/groups/{GROUP}")["members"]
                         if m["member_id"] == beta_id)
        assert shown_at - joined_ms <= 2000, f"beta shown {shown_at - joined_ms} ms after the broker saw it join"

        # The rebalance it caused completes and appears on the timeline with two members;
        # the grid then shows each partition owned by one of the two.
        generation = browser.wait(
            f"(() => {{ const rows = [...document.querySelectorAll('#rebalances tbody tr')];"
            f" return rows.length > {rebalances_before} && rows[0].dataset.generation !== 'in-progress'"
            " && rows[0].children[4].innerText === '2' && Number(rows[0].dataset.generation); })()",
            "a completed rebalance with two members", timeout=40)
        assert browser.js(f"document.querySelector('#timeline rect[data-generation=\"{generation}\"]') !== null")
        assert browser.js("document.querySelector('#timeline').dataset.bars") == str(rebalances_before + 1) or \
            int(browser.js("document.querySelector('#timeline').dataset.bars")) > rebalances_before
        detail = api(base, f"api/groups/{GROUP}")
        wait_for(lambda: len({p["owner"] for p in api(base, f"api/groups/{GROUP}")["partitions"]}) == 2, 20,
                 what="two owners in the API")
        detail = api(base, f"api/groups/{GROUP}")
        expected = [[f"shop:{p['partition']}", p["owner"], 1] for p in detail["partitions"]]
        grid = browser.wait(f"(() => {{ const g = {GRID}.map(r => [r.dataset.partition, r.dataset.owner,"
                            " r.querySelectorAll('td.owned').length]);"
                            f" return JSON.stringify(g) === {json.dumps(json.dumps(expected, separators=COMPACT))} && g; }})()",
                            "the grid to show the new owners")
        assert {owner for _, owner, _ in grid} == {alpha_id, beta_id}
        assert browser.js("window.__notReloaded === true")
        browser.screenshot(tmp_path / "console-two-members.png")
        print(f"screenshots: {tmp_path / 'console-one-member.png'} {tmp_path / 'console-two-members.png'}")
        for c in consumers:
            assert c.tally.error is None
    finally:
        if browser is not None:
            browser.close()
        for c in consumers:
            c.stop(commit=False)
        broker.finish()
