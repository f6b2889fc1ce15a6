"""The web console in headless Chromium at 1280x800, with a real broker and real consumers
(kafka-python, long client ids and host names as real deployments have): every table shows
every column without scrolling sideways (scrollWidth against clientWidth, measured on the
page Chromium laid out), the offsets table has each partition's committed offset, log end
and lag, and the lag chart draws one line per member (or topic), not one per partition.
Screenshots are saved in the test's tmp dir."""

from __future__ import annotations

import json
import re
import urllib.request

import pytest

from tests.integration.broker_process import BrokerProcess, free_port
from tests.integration.cdp import Browser
from tests.integration.clients import ConsumerThread, create_topic, wait_for

pytestmark = pytest.mark.integration

TOPIC, PARTITIONS, GROUP = "payments-ledger-events", 6, "ledger-projection-service-prod"
# Each table's overflow (scrollWidth - clientWidth of it and of its scrolling box) and the page's.
OVERFLOW = """(() => {
  const out = {page: document.documentElement.scrollWidth - document.documentElement.clientWidth};
  for (const t of document.querySelectorAll('table')) {
    const box = t.closest('.pane, .fit, #grid-wrap, section');
    out[t.id] = Math.max(t.scrollWidth - t.clientWidth, box.scrollWidth - box.clientWidth,
                         Math.round(t.getBoundingClientRect().right - window.innerWidth));
  }
  return out;
})()"""


def api(base: str, path: str) -> dict:
    return json.loads(urllib.request.urlopen(base + path, timeout=10).read())


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("console1280")
    proc = BrokerProcess(tmp / "data", extra={"http_listen": f"127.0.0.1:{free_port()}"}).start()
    proc.base = re.search(r"web console and metrics on (http://\S+/)", proc.log()).group(1)
    try:
        yield proc
    finally:
        proc.finish()


def test_at_1280_every_column_shows_offsets_per_partition_and_lag_per_member(broker, tmp_path):
    from confluent_kafka import Producer

    create_topic(broker.bootstrap, TOPIC, PARTITIONS)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(60):
        producer.produce(TOPIC, str(i).encode(), partition=i % PARTITIONS)
    producer.flush(10)
    consumers = [ConsumerThread("kafka-python", broker.bootstrap, GROUP, TOPIC, name,
                                client_id=f"{name}-ledger-projection-worker-eu-west-1b-7f9c8d6b5a")
                 for name in ("alpha", "beta")]
    browser = None
    try:
        for c in consumers:
            c.start()
        wait_for(lambda: sum(len(c.tally.consumed) for c in consumers) >= 60, 60, what="both read everything")
        wait_for(lambda: len({p["owner"] for p in api(broker.base, f"api/groups/{GROUP}")["partitions"]}) == 2, 40,
                 what="two owners")
        for c in consumers:
            c.commit_now()
        # More records after the commit: a lag to show.
        for i in range(30):
            producer.produce(TOPIC, b"late", partition=i % PARTITIONS)
        producer.flush(10)

        browser = Browser(tmp_path / "chromium")
        browser.open(f"{broker.base}#group={GROUP}", width=1280, height=800)
        browser.wait(f"document.querySelectorAll('#members tbody tr').length === 2 && "
                     f"document.querySelectorAll('#offsets tbody tr').length === {PARTITIONS}", "members and offsets")
        # Every column of every table in the window, nothing to scroll sideways.
        overflow = browser.js(OVERFLOW)
        assert set(overflow) >= {"page", "groups", "members", "offsets", "rebalances"}
        assert all(v <= 1 for v in overflow.values()), overflow
        headers = browser.js("[...document.querySelectorAll('#members th')].map(th => th.innerText.trim())")
        assert headers[-2:] == ["PARTITIONS", "JOINED"]
        browser.screenshot(tmp_path / "console-1280x800.png", full_page=False)

        # The offsets table: committed, log end and lag as the broker has them (they agree
        # with what the API reads from the logs and the group's commits).
        detail = api(broker.base, f"api/groups/{GROUP}")
        expected = [[f"{TOPIC}:{p['partition']}", p["committed"], p["end"], p["lag"]] for p in detail["partitions"]]
        assert all(p["committed"] == 10 and p["end"] == 15 and p["lag"] == 5 for p in detail["partitions"]), detail
        shown = browser.wait(
            "(() => { const rows = [...document.querySelectorAll('#offsets tbody tr')].map(r => "
            "[r.dataset.partition, ...[3, 4, 5].map(i => Number(r.children[i].innerText.replace(/,/g, '')))]);"
            f" return JSON.stringify(rows) === {json.dumps(json.dumps(expected, separators=(',', ':')))} && rows; }})()",
            "the offsets table")
        assert len(shown) == PARTITIONS

        # The lag chart: a line per member (2), each the sum of its partitions' lag (15); per topic, one line.
        browser.wait("document.querySelector('#lag-chart').dataset.series === '2'", "one lag line per member")
        legend = browser.js("[...document.querySelectorAll('#lag-legend span[data-key]')].map(s => s.innerText)")
        assert len(legend) == 2 and all(text.endswith(": 15") for text in legend), legend
        browser.js("(() => { const s = document.querySelector('#lag-by'); s.value = 'topic';"
                   " s.dispatchEvent(new Event('change')); })()")
        assert browser.js("document.querySelector('#lag-chart').dataset.series") == "1"
        assert browser.js("document.querySelector('#lag-legend span[data-key]').innerText").endswith(f"{TOPIC}: 30")
        browser.screenshot(tmp_path / "console-1280-full.png")
        print(f"screenshots: {tmp_path / 'console-1280x800.png'} {tmp_path / 'console-1280-full.png'}")
        for c in consumers:
            assert c.tally.error is None
    finally:
        if browser is not None:
            browser.close()
        for c in consumers:
            c.stop(commit=False)
