"""The web console in headless Chromium at 1280x800, with a real broker and real consumers
(kafka-python, long client ids and host names as real deployments have): every table shows
every column without scrolling sideways (scrollWidth against clientWidth, measured on the
page Chromium laid out), the offsets table has each partition's committed offset, log end
and lag, and the lag chart draws one line per member (or topic), not one per partition.
Screenshots are saved in the test's tmp dir."""

from __future__ import annotations

import json
import re
import urllib.error
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


def state_of(base: str, group: str) -> str | None:
    try:
        return api(base, f"api/groups/{group}")["state"]
    except urllib.error.HTTPError:
        return None


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("console1280")
    proc = BrokerProcess(tmp / "data", extra={"http_listen": f"127.0.0.1:{free_port()}"}).start()
    proc.base = re.search(r"web console and metrics on (http://\S+/)", proc.log()).group(1)
    try:
        yield proc
    finally:
        proc.finish()


@pytest.fixture
def chromium(tmp_path):
    """A headless Chromium for one test, closed after it."""
    browser = Browser(tmp_path / "chromium")
    try:
        yield browser
    finally:
        browser.close()


def test_at_1280_every_column_shows_offsets_per_partition_and_lag_per_member(broker, tmp_path, chromium):
    from confluent_kafka import Producer

    create_topic(broker.bootstrap, TOPIC, PARTITIONS)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(60):
        producer.produce(TOPIC, str(i).encode(), partition=i % PARTITIONS)
    producer.flush(10)
    consumers = [ConsumerThread("kafka-python", broker.bootstrap, GROUP, TOPIC, name,
                                client_id=f"{name}-ledger-projection-worker-eu-west-1b-7f9c8d6b5a")
                 for name in ("alpha", "beta")]
    browser = chromium
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

        browser.open(f"{broker.base}#group={GROUP}", width=1280, height=800)
        browser.wait(f"document.querySelectorAll('#members tbody tr').length === 2 && "
                     f"document.querySelectorAll('#offsets tbody tr').length === {PARTITIONS}", "members and offsets")
        # Every column of every table in the window, nothing to scroll sideways.
        overflow = browser.js(OVERFLOW)
        assert set(overflow) >= {"page", "groups", "members", "offsets", "rebalances"}
        assert all(v <= 1 for v in overflow.values()), overflow
        headers = browser.js("[...document.querySelectorAll('#members th')].map(th => th.innerText.trim())")
        assert headers[-4:-1] == ["PARTITIONS", "JOINED", "CLIENT METRICS"]
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
        # The chart shows the console's lag samples (one every SAMPLE_S, 2 s, pushed to the
        # page), not the lag at this moment as the offsets table does: the latest sample can
        # predate the late records (lag 0), so wait for the one that has them.
        browser.wait("document.querySelector('#lag-chart').dataset.series === '2'", "one lag line per member")
        legend = browser.wait(
            "(() => { const l = [...document.querySelectorAll('#lag-legend span[data-key]')].map(s => s.innerText);"
            " return l.length === 2 && l.every(t => t.endsWith(': 15')) && l; })()", "each member's lag 15 in the legend")
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
        for c in consumers:
            c.stop(commit=False)


def click(browser: Browser, selector: str) -> None:
    browser.js(f"document.querySelector({json.dumps(selector)}).click()")


def test_an_offset_reset_from_the_console_is_refused_on_an_active_group_and_moves_what_a_client_reads(
        broker, tmp_path, chromium):
    from confluent_kafka import Consumer, TopicPartition

    topic, group = "reset-t", "reset-g"
    create_topic(broker.bootstrap, topic, 2)
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(20):
        producer.produce(topic, str(i).encode(), partition=i % 2)
    producer.flush(10)
    member = ConsumerThread("kafka-python", broker.bootstrap, group, topic, "resetter")
    browser = chromium
    try:
        member.start()
        wait_for(lambda: len(member.tally.consumed) == 20, 40, what="the member read everything")
        member.commit_now()
        browser.open(f"{broker.base}#group={group}", width=1280, height=800)
        browser.wait("document.querySelectorAll('#members tbody tr').length === 1", "the member")

        # Active: the preview is refused with the CLI's (Kafka's) words; nothing to execute.
        click(browser, "#reset-open")
        browser.js("document.querySelector('#reset-to').value = 'earliest';"
                   "document.querySelector('#reset-to').dispatchEvent(new Event('input'))")
        click(browser, "#reset-preview")
        refusal = browser.wait("document.querySelector('#reset-error').innerText", "the refusal")
        assert (f"assignments can only be reset if the group '{group}' is inactive, but the current state is "
                "Stable (1 member(s))") in refusal, refusal
        assert browser.js("document.querySelector('#reset-execute').disabled") is True
        browser.screenshot(tmp_path / "console-reset-refused.png", full_page=False)
        assert {p["committed"] for p in api(broker.base, f"api/groups/{group}")["partitions"]} == {10}

        # Inactive (its consumer closed and left): preview shows the plan, execute commits it.
        member.stop(commit=False)
        wait_for(lambda: api(broker.base, f"api/groups/{group}")["state"] == "Empty", 30, what="the group Empty")
        click(browser, "#reset-preview")
        plan = browser.wait("(() => { const rows = [...document.querySelectorAll('#reset-plan tbody tr')];"
                            " return rows.length === 2 && rows.map(r => [r.dataset.partition,"
                            " r.children[2].innerText, r.children[3].innerText]); })()", "the plan")
        assert plan == [[f"{topic}:0", "10", "0"], [f"{topic}:1", "10", "0"]]
        assert browser.js("document.querySelector('#reset-error').innerText") == ""
        browser.screenshot(tmp_path / "console-reset-plan.png", full_page=False)
        click(browser, "#reset-execute")
        browser.wait("document.querySelector('#action-status').dataset.outcome === 'ok'", "the reset done")
        browser.wait("[...document.querySelectorAll('#offsets tbody tr')].every(r => r.children[3].innerText === '0')",
                     "the offsets table at 0")

        # A real client of the group reads the new committed offsets, and consumes from them.
        client = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False,
                           "auto.offset.reset": "latest"})
        try:
            committed = client.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10)
            assert [tp.offset for tp in committed] == [0, 0]
            client.subscribe([topic])
            seen: set[tuple[int, int]] = set()

            def read() -> bool:
                m = client.poll(0.5)
                if m is not None and m.error() is None:
                    seen.add((m.partition(), m.offset()))
                return len(seen) == 20
            wait_for(read, 40, what="the client to read from offset 0 again")
            assert {(p, 0) for p in (0, 1)} <= seen
        finally:
            client.close()
    finally:
        member.stop(commit=False)


def test_the_topic_view_browses_records_from_an_offset_or_a_time(broker, tmp_path, chromium):
    from confluent_kafka import Producer

    topic, t0 = "browse-t", 1_700_000_000_000
    create_topic(broker.bootstrap, topic, 2)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(12):
        producer.produce(topic, value=f"order {i} " + "x" * 300, key=f"customer-{i}", partition=0,
                         timestamp=t0 + i * 1000, headers=[("trace", f"t{i}".encode()), ("bin", b"\xff\x00")])
    producer.produce(topic, value=b"\x00\x01\xfe", key=None, partition=1)
    producer.flush(10)
    browser = chromium
    browser.open(broker.base, width=1280, height=800)
    browser.wait(f"[...document.querySelectorAll('#browse-topic option')].some(o => o.value === '{topic}')",
                 "the topic in the list")
    browser.js(f"(() => {{ const s = document.querySelector('#browse-topic'); s.value = '{topic}';"
               " s.dispatchEvent(new Event('change')); document.querySelector('#browse-offset').value = '3';"
               " document.querySelector('#browse-limit').value = '4'; })()")
    click(browser, "#browse-go")
    rows = browser.wait("(() => { const rows = [...document.querySelectorAll('#records tbody tr')];"
                        " return rows.length === 4 && rows.map(r => [...r.children].map(c => c.innerText)); })()",
                        "records from offset 3")
    assert [r[1] for r in rows] == ["3", "4", "5", "6"]
    assert rows[0][0] == "0" and rows[0][3] == "customer-3" and rows[0][4].startswith("order 3 ")
    assert rows[0][2].startswith("2023-11-14 22:13:23") and rows[0][5] == "trace=t3, bin=(bytes)"
    assert browser.js(OVERFLOW)["records"] <= 1                     # long values cut, not wider
    browser.screenshot(tmp_path / "console-topic-view.png", full_page=False)
    # Next: the following records.
    click(browser, "#browse-next")
    browser.wait("document.querySelector('#records tbody tr').dataset.offset === '7'", "the next page")
    # From a time: the first record at or after it.
    browser.js(f"(() => {{ const s = document.querySelector('#browse-from'); s.value = 'time';"
               " s.dispatchEvent(new Event('change')); const t = " + str(t0 + 9000) + ";"
               " document.querySelector('#browse-time').value ="
               " new Date(t - new Date(t).getTimezoneOffset() * 60000).toISOString().slice(0, 19); })()")
    click(browser, "#browse-go")
    browser.wait("document.querySelector('#records tbody tr').dataset.offset === '9'", "records from the time")
    # Bytes that are not UTF-8 are marked as such; a null key says null.
    browser.js("(() => { const s = document.querySelector('#browse-partition'); s.value = '1';"
               " const f = document.querySelector('#browse-from'); f.value = 'offset';"
               " f.dispatchEvent(new Event('change')); document.querySelector('#browse-offset').value = '0'; })()")
    click(browser, "#browse-go")
    row = browser.wait("(() => { const r = document.querySelector('#records tbody tr');"
                       " return r && r.children[0].innerText === '1' && [...r.children].map(c => c.innerText); })()",
                       "partition 1")
    assert row[3] == "null" and row[4] == "3 bytes"


def test_remove_a_static_member_whose_process_is_gone_then_delete_the_group(broker, tmp_path, chromium):
    topic, group = "static-t", "static-g"
    create_topic(broker.bootstrap, topic, 2)
    # A long session: the member stays in the group after its process stops (a static member
    # closing does not leave), as a crashed static consumer does.
    member = ConsumerThread("confluent-kafka", broker.bootstrap, group, topic, "keeper",
                            **{"group.instance.id": "keeper-1", "session.timeout.ms": 45_000})
    browser = chromium
    try:
        member.start()
        wait_for(lambda: state_of(broker.base, group) == "Stable", 40, what="the group Stable")
        member.stop(commit=False)
        browser.open(f"{broker.base}#group={group}", width=1280, height=800)
        browser.wait("document.querySelector('#members button[data-remove=\"keeper-1\"]') !== null", "a remove button")
        # Deleting a group with a member is refused (Kafka's NON_EMPTY_GROUP), in the dialog.
        click(browser, "#delete-open")
        click(browser, "#confirm-ok")
        refused = browser.wait("document.querySelector('#confirm-error').innerText", "the refusal")
        assert "NON_EMPTY_GROUP" in refused, refused
        browser.js("document.querySelector('#confirm-dialog').close()")
        # Remove the member (confirmed), then the group is Empty and can be deleted.
        click(browser, '#members button[data-remove="keeper-1"]')
        assert "keeper-1" in browser.js("document.querySelector('#confirm-text').innerText")
        click(browser, "#confirm-ok")
        browser.wait("document.querySelector('#action-status').innerText === 'removed keeper-1'", "removed")
        wait_for(lambda: api(broker.base, f"api/groups/{group}")["state"] == "Empty", 20, what="the group Empty")
        click(browser, "#delete-open")
        click(browser, "#confirm-ok")
        browser.wait(f"document.querySelector('#action-status').innerText === 'deleted {group}'", "deleted")
        browser.wait("!document.querySelector('#detail-gone').hidden", "the group shown as gone")
        assert urllib.request.urlopen(broker.base + "api/groups", timeout=10).read().count(group.encode()) == 0
    finally:
        member.stop(commit=False)
