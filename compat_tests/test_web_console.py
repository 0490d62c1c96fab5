"""The web console (`josefk console`) in a real headless Chromium (Debian's chromium and
chromedriver, through Selenium): every page, browsing messages a real producer wrote, and the
confirmed admin actions checked with real clients. Screenshots of the main pages are kept in the
test's pytest tmp dir."""
from __future__ import annotations

import json
import shutil
import subprocess
import time

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import ConfigResource
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import Select, WebDriverWait

from josefk.faults.processes import BROKER_PYTHON, REPO_ROOT, free_port, port_accepts
from compat_tests.helpers import (admin_client, consume_n, consumer, create_topic, flush_all,
                                  producer, unique_topic, wait_for_topic)

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


@pytest.fixture
def console(broker_factory, tmp_path):
    b = broker_factory()
    port = free_port()
    log = open(tmp_path / "console.log", "w")
    proc = subprocess.Popen([BROKER_PYTHON, "-m", "josefk", "console", "--bootstrap-server",
                             b.bootstrap, "--port", str(port), "--lag-interval", "0.5"],
                            cwd=str(REPO_ROOT), stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 20
    while not port_accepts("127.0.0.1", port):
        assert proc.poll() is None and time.monotonic() < deadline, "console did not start"
        time.sleep(0.1)
    yield b, f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(10)
    log.close()


@pytest.fixture
def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,1000"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=CHROMEDRIVER),
                              options=opts)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


def cells(driver, table_id):
    rows = driver.find_elements(By.CSS_SELECTOR, f"#{table_id} tr")[1:]
    return [[td.text for td in r.find_elements(By.TAG_NAME, "td")] for r in rows]


def click(driver, element):
    """Click and wait until the next page replaced this one."""
    element.click()
    WebDriverWait(driver, 15).until(expected_conditions.staleness_of(element))


def submit_and_confirm(driver, form_id, **fields):
    form = driver.find_element(By.ID, form_id)
    for name, value in fields.items():
        el = form.find_element(By.NAME, name)
        if el.tag_name == "select":
            Select(el).select_by_value(str(value))
        else:
            el.clear()
            el.send_keys(str(value))
    click(driver, form.find_element(By.CSS_SELECTOR, "button[type=submit]"))
    text = driver.find_element(By.ID, "confirm-text").text
    click(driver, driver.find_element(By.ID, "confirm"))
    return text


def test_console_pages_browsing_and_actions(console, browser, tmp_path):
    b, url = console
    shots = tmp_path / "screenshots"
    shots.mkdir()
    topic = create_topic(b.bootstrap, unique_topic("web"), partitions=2)
    p = producer(b.bootstrap)
    for i in range(6):
        value = json.dumps({"n": i, "tags": ["a", "b"]}).encode() if i % 2 == 0 else b"plain"
        p.produce(topic, key=f"key-{i}".encode(), value=value, partition=0,
                  headers=[("trace", f"t{i}".encode())])
    p.produce(topic, key=b"other", value=b"p1", partition=1)
    flush_all(p)
    group = unique_topic("web-group")
    c = consumer(b.bootstrap, **{"group.id": group})
    c.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
    consume_n(c, 7)
    c.commit(offsets=[TopicPartition(topic, 0, 6), TopicPartition(topic, 1, 1)],
             asynchronous=False)
    c.close()

    browser.get(url + "/")
    assert "1 broker(s)" in browser.find_element(By.ID, "cluster").text
    assert cells(browser, "brokers")[0][:3] == [str(b.node_id), "127.0.0.1", str(b.port)]
    browser.save_screenshot(str(shots / "cluster.png"))

    browser.get(url + "/topics")
    click(browser, browser.find_element(By.LINK_TEXT, topic))
    rows = cells(browser, "partitions")
    assert [r[:7] for r in rows] == [["0", "1", "1", "1", "0", "6", "6"],
                                     ["1", "1", "1", "1", "0", "1", "1"]]
    assert int(rows[0][7]) > 0
    assert ["retention.ms", "604800000", "DEFAULT_CONFIG"] in cells(browser, "configs")
    browser.save_screenshot(str(shots / "topic.png"))

    click(browser, browser.find_element(By.LINK_TEXT, "browse"))
    rows = cells(browser, "messages")
    assert [r[0] for r in rows] == [str(i) for i in range(6)]
    assert rows[0][2] == "key-0" and rows[0][3] == "trace: t0"
    pretty = browser.find_elements(By.CSS_SELECTOR, "#messages pre.json")[0].text
    assert json.loads(pretty) == {"n": 0, "tags": ["a", "b"]} and "\n" in pretty
    assert rows[1][4] == "plain"
    browser.save_screenshot(str(shots / "messages.png"))
    # From an offset, and a key search.
    browser.get(url + f"/topics/{topic}/messages?partition=0&offset=4")
    assert [r[0] for r in cells(browser, "messages")] == ["4", "5"]
    browser.get(url + f"/topics/{topic}/messages?partition=0&key=key-3")
    assert [r[2] for r in cells(browser, "messages")] == ["key-3"]
    ts = int(cells(browser, "messages")[0][1])
    browser.get(url + f"/topics/{topic}/messages?partition=0&timestamp={ts}")
    assert cells(browser, "messages")[0][0] in {"0", "1", "2", "3"}

    # A live member of another group shows with its assignment.
    live_group = unique_topic("web-live")
    live = consumer(b.bootstrap, **{"group.id": live_group, "auto.offset.reset": "earliest"})
    live.subscribe([topic])
    consume_n(live, 7)
    browser.get(url + f"/groups/{live_group}")
    assert "Stable" in browser.find_element(By.ID, "state").text
    (member,) = cells(browser, "members")
    assert member[0].startswith("rdkafka-") and member[3] == f"{topic}-0, {topic}-1"
    assert {r[5] for r in cells(browser, "lag")} == {member[0]}
    live.close()

    browser.get(url + "/groups")
    click(browser, browser.find_element(By.LINK_TEXT, group))
    assert "Empty" in browser.find_element(By.ID, "state").text
    lag = cells(browser, "lag")
    assert [r[:5] for r in lag] == [[topic, "0", "6", "6", "0"], [topic, "1", "1", "1", "0"]]
    time.sleep(1.2)  # the console samples lag every 0.5 s in this test
    browser.refresh()
    assert browser.find_element(By.ID, "lag-chart").tag_name == "svg"
    browser.save_screenshot(str(shots / "group.png"))

    # Reset the group's offsets to the earliest, through the confirmation page.
    text = submit_and_confirm(browser, "reset-offsets", topic=topic, to="earliest")
    assert text == f"Reset the offsets of group {group} on {topic} to earliest?"
    assert browser.find_element(By.ID, "flash").text == "offsets reset"
    assert [r[4] for r in cells(browser, "lag")] == ["6", "1"]
    c = consumer(b.bootstrap, **{"group.id": group})
    committed = c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10)
    c.close()
    assert [tp.offset for tp in committed] == [0, 0]

    # Alter a topic config and delete records, each confirmed.
    browser.get(url + f"/topics/{topic}")
    submit_and_confirm(browser, "alter-config", name="retention.ms", value="120000")
    assert ["retention.ms", "120000", "DYNAMIC_TOPIC_CONFIG"] in cells(browser, "configs")
    admin = admin_client(b.bootstrap)
    res = ConfigResource("topic", topic)
    assert admin.describe_configs([res])[res].result(15)["retention.ms"].value == "120000"
    submit_and_confirm(browser, "delete-records", partition=0, offset=4)
    assert cells(browser, "partitions")[0][4:6] == ["4", "6"]
    c = consumer(b.bootstrap)
    assert c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (4, 6)
    c.close()

    # Create a topic; an action that fails shows the broker's error.
    created = unique_topic("web-created")
    browser.get(url + "/create-topic")
    submit_and_confirm(browser, "create-topic", name=created, partitions=3,
                       configs="cleanup.policy=compact")
    assert len(cells(browser, "partitions")) == 3
    assert len(wait_for_topic(admin, created, 3).partitions) == 3
    browser.get(url + "/create-topic")
    submit_and_confirm(browser, "create-topic", name=created, partitions=1)
    assert "already exists" in browser.find_element(By.ID, "error").text

    browser.get(url + f"/brokers/{b.node_id}")
    configs = {r[0]: r for r in cells(browser, "configs")}
    assert configs["log.dirs"][2] == "STATIC_BROKER_CONFIG" and configs["log.dirs"][3] == "no"
    assert configs["log.retention.hours"][3] == "yes"
    browser.save_screenshot(str(shots / "broker.png"))
    assert sorted(p.name for p in shots.iterdir()) == [
        "broker.png", "cluster.png", "group.png", "messages.png", "topic.png"]
    print(f"screenshots in {shots}")
