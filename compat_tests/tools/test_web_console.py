"""The web console (`josefk console`) in a real headless Chromium (Debian's chromium and
chromedriver, through Selenium), on the shared broker and the shared `josefk registry`: every
page, browsing messages real producers wrote (plain, and Avro, JSON Schema and Protobuf through
confluent-kafka's serializers, decoded by the console; every partition at once, page by page,
searched, live), the Schema Registry's pages, the lists of topics and groups with their totals,
the security pages, the confirmed admin actions checked with real clients (ACLs on a broker of
their own with an authorizer), and the console without a registry.

Pages are checked by DOM and by screenshot: every screenshot must show the dark header, a page
that is not blank and nothing wider than the window or its card (also in an 800 px window);
the lag chart must show its line across the plot and its axes; the header and two
pretty-printed schemas must match the reference images in compat_tests/screenshots/ (a few
percent of pixels may differ). After a deliberate change of the look,
`JOSEFK_UPDATE_SCREENSHOTS=1` rewrites the references. Each test keeps its
screenshots in its pytest tmp dir (the path is printed)."""
from __future__ import annotations

import base64
import datetime
import decimal
import io
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import (AclBindingFilter, AclOperation, AclPermissionType,
                                   ConfigResource, ResourcePatternType, ResourceType)
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2
from PIL import Image, ImageChops
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.support.ui import Select, WebDriverWait

from josefk.connect.rest.server import RestServer
from josefk.faults.processes import BROKER_PYTHON, REPO_ROOT, port_accepts
from josefk.zk.local_server import free_port
from compat_tests.helpers import (admin_client, consume_n, consumer, create_topic, flush_all,
                                  producer, read_partition, unique_topic, wait_for_topic,
                                  wait_for_topic_gone)
from testkit.connect_herder import SINK as FILE_SINK, SOURCE as FILE_SOURCE, DictHerder, Loop

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
ZONE = "Asia/Tokyo"  # the viewer's zone (UTC+09:00), so local and UTC renderings differ
REFERENCES = Path(__file__).parent / "screenshots"
UPDATE_REFERENCES = os.environ.get("JOSEFK_UPDATE_SCREENSHOTS") == "1"
LINE_BLUE = (37, 99, 235)


def _start_console(bootstrap: str, log_path: Path, *args: str):
    port = free_port()
    log = open(log_path, "w")
    proc = subprocess.Popen([BROKER_PYTHON, "-m", "josefk", "console", "--bootstrap-server",
                             bootstrap, "--port", str(port), *args],
                            cwd=str(REPO_ROOT), stdout=log, stderr=subprocess.STDOUT)
    log.close()
    deadline = time.monotonic() + 20
    while not port_accepts("127.0.0.1", port):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait(5)
            raise AssertionError(f"console did not start: {log_path.read_text()}")
        time.sleep(0.1)
    return proc, f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def console(broker, schema_registry, tmp_path_factory):
    """One console on the shared broker, showing the shared registry."""
    proc, url = _start_console(broker.bootstrap,
                               tmp_path_factory.mktemp("console") / "console.log",
                               "--schema-registry", schema_registry.url, "--lag-interval", "2")
    yield url
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def console_factory(broker, tmp_path):
    procs = []

    def start(*args):
        proc, url = _start_console(broker.bootstrap, tmp_path / f"console{len(procs)}.log",
                                   *args)
        procs.append(proc)
        return url
    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,1000", "--force-device-scale-factor=1",
                "--hide-scrollbars"):
        opts.add_argument(arg)
    # chromium leaves its profile's singleton socket in $TMPDIR: keep it in the test's dirs
    tmp = str(tmp_path_factory.mktemp("chromium-tmp"))
    driver = webdriver.Chrome(service=webdriver.ChromeService(
        executable_path=CHROMEDRIVER, env={**os.environ, "TMPDIR": tmp}), options=opts)
    driver.set_page_load_timeout(30)
    driver.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": ZONE})
    yield driver
    driver.quit()


@pytest.fixture
def shots(tmp_path):
    path = tmp_path / "screenshots"
    path.mkdir()
    yield path
    print(f"screenshots in {path}")


def cells(driver, table_id):
    rows = driver.find_elements(By.CSS_SELECTOR, f"#{table_id} tr")[1:]
    return [[td.text for td in r.find_elements(By.TAG_NAME, "td")] for r in rows]


def content(element) -> str:
    """All of ``element``'s text, also where it is folded away (a closed <details>)."""
    return element.get_attribute("textContent")


def click(driver, element):
    """Click and wait until the next page replaced this one."""
    element.click()
    WebDriverWait(driver, 15).until(lambda _driver: _is_stale(element))


def _is_stale(element) -> bool:
    """Whether ``element``'s page is gone. Chromedriver sometimes says so with an "unknown
    error" (Node ... does not belong to the document) instead of a stale element reference
    (SeleniumHQ/selenium#15401), so that answer means stale too."""
    try:
        element.is_enabled()
    except StaleElementReferenceException:
        return True
    except WebDriverException as e:
        if "does not belong to the document" not in (e.msg or ""):
            raise
        return True
    return False


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


def local_time(ms: int) -> str:
    """How the console's script writes ``ms`` in the viewer's zone."""
    t = datetime.datetime.fromtimestamp(ms / 1000, ZoneInfo(ZONE))
    return f"{t:%Y-%m-%d %H:%M:%S}.{ms % 1000:03d}"


# -- what a screenshot must show -------------------------------------------------------------
def _mask(img: Image.Image, near, within: int) -> Image.Image:
    """White where ``img``'s pixel is within ``within`` of the colour ``near`` (per channel)."""
    bands = [band.point(lambda v, c=c: 255 if abs(v - c) <= within else 0)
             for band, c in zip(img.split(), near)]
    return ImageChops.multiply(ImageChops.multiply(bands[0], bands[1]), bands[2])


def _share(img: Image.Image, near, within: int) -> float:
    return _mask(img, near, within).histogram()[255] / (img.width * img.height)


def assert_page_drawn(driver, path: Path) -> Image.Image:
    """A screenshot of the page, which must show the dark header band across the top, white
    cards on the light background with content drawn in them, nothing wider than the window
    and nothing loaded from anywhere but the console."""
    driver.save_screenshot(str(path))
    img = Image.open(path).convert("RGB")
    header = driver.find_element(By.TAG_NAME, "header").rect
    assert header["y"] == 0 and header["width"] == img.width, header
    band = img.crop((0, 0, img.width, int(header["height"])))
    assert _share(band, (17, 24, 39), 12) > 0.8, f"{path.name}: the header is not drawn"
    page = img.crop((0, int(header["height"]), img.width, img.height))
    background, cards = _share(page, (243, 244, 246), 2), _share(page, (255, 255, 255), 0)
    assert background > 0.01, f"{path.name}: no page background"
    assert cards > 0.05, f"{path.name}: no cards"
    assert 1 - background - cards > 0.005, f"{path.name}: nothing drawn on the page"
    assert driver.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth"), \
        f"{path.name}: the page is wider than the window"
    scrolled = driver.execute_script(
        "return [...document.querySelectorAll('.card')].filter(c => c.scrollWidth > "
        "c.clientWidth).map(c => c.querySelector('[id]')?.id || c.textContent.slice(0, 40))")
    assert not scrolled, f"{path.name}: wider than their cards: {scrolled}"
    origin = driver.current_url.split("/", 3)[:3]
    loaded = driver.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)")
    assert all(u.split("/", 3)[:3] == origin for u in loaded), loaded
    return img


def assert_chart_drawn(element, path: Path) -> None:
    """The lag chart: its line runs across the plot, its axes and their labels show."""
    path.write_bytes(element.screenshot_as_png)
    img = Image.open(path).convert("RGB")
    left, right, top, bottom = 64, 20, 14, 46  # the plot's margins (web_html.lag_chart)
    plot_w, plot_h = img.width - left - right, img.height - top - bottom
    line = _mask(img, LINE_BLUE, 30).getbbox()
    assert line and line[2] - line[0] > 0.95 * plot_w, f"the line spans {line} of {plot_w}"
    y_axis = _mask(img.crop((left - 3, 0, left + 3, img.height)), (107, 114, 128), 30).getbbox()
    assert y_axis and y_axis[3] - y_axis[1] >= plot_h - 2, f"no lag axis: {y_axis}"
    x_axis = _mask(img.crop((0, top + plot_h - 3, img.width, top + plot_h + 3)),
                   (107, 114, 128), 30).getbbox()
    assert x_axis and x_axis[2] - x_axis[0] >= plot_w - 2, f"no time axis: {x_axis}"
    text = (75, 85, 99)
    assert _share(img.crop((0, 0, left - 4, img.height)), text, 60) > 0.005, "no lag labels"
    assert _share(img.crop((left, img.height - bottom + 6, img.width, img.height)), text,
                  60) > 0.005, "no time labels"


def assert_like_reference(element, name: str, shots: Path, tolerance: float = 0.002) -> None:
    """``element`` looks like compat_tests/screenshots/``name``: the same size, at most
    ``tolerance`` of its pixels clearly different (a colour channel off by more than 32;
    recolouring the keys of a pretty-printed schema changes 0.6% of them)."""
    got = Image.open(io.BytesIO(element.screenshot_as_png)).convert("RGB")
    got.save(shots / name)
    reference = REFERENCES / name
    if UPDATE_REFERENCES:
        REFERENCES.mkdir(exist_ok=True)
        got.save(reference)
    assert reference.exists(), f"no {reference}: make it with JOSEFK_UPDATE_SCREENSHOTS=1"
    ref = Image.open(reference).convert("RGB")
    assert got.size == ref.size, f"{name}: {got.size} != the reference's {ref.size}"
    r, g, b = ImageChops.difference(got, ref).split()
    diff = ImageChops.lighter(ImageChops.lighter(r, g), b).point(lambda v: 255 if v > 32 else 0)
    changed = diff.histogram()[255] / (got.width * got.height)
    if changed > tolerance:
        diff.save(shots / f"diff-{name}")
    assert changed <= tolerance, f"{name}: {changed:.2%} of pixels differ from the reference"


# -- the cluster pages, the message browser and the actions ----------------------------------
def test_console_pages_browsing_and_actions(broker, console, browser, shots):
    b, url = broker, console
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
    tiles = browser.find_element(By.ID, "stats").text
    assert "1\nbrokers" in tiles and "schema subjects" in tiles
    assert cells(browser, "brokers")[0][:3] == [str(b.node_id), "127.0.0.1", str(b.port)]
    assert browser.find_element(By.CSS_SELECTOR, "header nav a.active").text == "Cluster"
    assert_page_drawn(browser, shots / "cluster.png")

    browser.get(url + "/topics")
    click(browser, browser.find_element(By.LINK_TEXT, topic))
    rows = cells(browser, "partitions")
    assert [r[:7] for r in rows] == [["0", "1", "1", "1", "0", "6", "6"],
                                     ["1", "1", "1", "1", "0", "1", "1"]]
    assert int(rows[0][7]) > 0
    assert "7\nmessages" in browser.find_element(By.ID, "stats").text
    assert ["retention.ms", "604800000", "DEFAULT_CONFIG"] in cells(browser, "configs")
    assert "No schemas registered" in browser.find_element(By.ID, "topic-schemas").text
    assert [a.text for a in browser.find_elements(By.CSS_SELECTOR, ".crumbs a")] == ["Topics"]
    assert_page_drawn(browser, shots / "topic.png")

    click(browser, browser.find_element(By.LINK_TEXT, "browse"))
    rows = cells(browser, "messages")
    assert [r[:2] for r in rows] == [["0", str(i)] for i in range(5, -1, -1)]  # newest first
    assert rows[-1][3] == "key-0" and rows[-1][5] == "trace: t0"
    # JSON on one line; a click opens it pretty-printed.
    line = browser.find_element(By.CSS_SELECTOR, "#messages tbody tr:last-child code.json")
    assert json.loads(line.text.strip("\u25b8 ")) == {"n": 0, "tags": ["a", "b"]}
    assert line.find_element(By.CSS_SELECTOR, ".k").text == '"n"'
    click_open = browser.find_element(By.CSS_SELECTOR, "#messages tbody tr:last-child summary")
    click_open.click()
    pretty = browser.find_element(By.CSS_SELECTOR, "#messages tbody tr:last-child pre.json")
    assert json.loads(pretty.text) == {"n": 0, "tags": ["a", "b"]} and "\n" in pretty.text
    assert rows[-2][4] == "plain"
    # Timestamps in the viewer's zone, written by the page's script.
    stamps = [int(t.get_attribute("data-ms"))
              for t in browser.find_elements(By.CSS_SELECTOR, "#messages time")]
    assert [r[2] for r in rows] == [local_time(ms) for ms in stamps]
    headers = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#messages th")]
    assert headers == ["Partition", "Offset", f"Timestamp ({ZONE})", "Key", "Value", "Headers"]
    assert_page_drawn(browser, shots / "messages.png")
    # From an offset, a key search, and from a time picked in the viewer's zone.
    browser.get(url + f"/topics/{topic}/messages?partition=0&offset=4")
    assert [r[1] for r in cells(browser, "messages")] == ["4", "5"]
    browser.get(url + f"/topics/{topic}/messages?partition=0&q=KEY-3&in=key")
    assert [r[3] for r in cells(browser, "messages")] == ["key-3"]
    ts = int(browser.find_element(By.CSS_SELECTOR, "#messages time").get_attribute("data-ms"))
    picked = datetime.datetime.fromtimestamp(ts // 1000, ZoneInfo(ZONE))
    browser.get(url + f"/topics/{topic}/messages?partition=0")
    browser.execute_script(
        "const i = document.getElementById('from-time'); i.value = arguments[0];"
        "i.dispatchEvent(new Event('change'));", f"{picked:%Y-%m-%dT%H:%M:%S}")
    click(browser, browser.find_element(By.CSS_SELECTOR, "#browse button"))
    assert f"timestamp={ts // 1000 * 1000}" in browser.current_url
    assert "seek=timestamp" in browser.current_url
    assert cells(browser, "messages")[0][1] in {"0", "1", "2", "3"}

    # A live member of another group shows with its assignment.
    live_group = unique_topic("web-live")
    live = consumer(b.bootstrap, **{"group.id": live_group, "auto.offset.reset": "earliest"})
    live.subscribe([topic])
    consume_n(live, 7)
    browser.get(url + f"/groups/{live_group}")
    assert browser.find_element(By.ID, "state").text == "Stable"
    (member,) = cells(browser, "members")
    assert member[0].startswith("rdkafka-") and member[3] == f"{topic}-0, {topic}-1"
    assert {r[5] for r in cells(browser, "lag")} == {member[0]}
    live.close()

    browser.get(url + "/groups")
    listed = {r[0]: r for r in cells(browser, "groups")}
    assert listed[group] == [group, "Empty", "0", topic, "0", str(b.node_id)]
    click(browser, browser.find_element(By.LINK_TEXT, group))
    assert browser.find_element(By.ID, "state").text == "Empty"
    lag = cells(browser, "lag")
    assert [r[:5] for r in lag] == [[topic, "0", "6", "6", "0"], [topic, "1", "1", "1", "0"]]

    # Reset the group's offsets to the earliest, through the confirmation page.
    text = submit_and_confirm(browser, "reset-offsets", topic=topic, to="earliest")
    assert text == f"Reset the offsets of group {group} on {topic} to earliest?"
    assert browser.find_element(By.ID, "flash").text == "offsets reset"
    assert [r[4] for r in cells(browser, "lag")] == ["6", "1"]
    c = consumer(b.bootstrap, **{"group.id": group})
    committed = c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10)
    c.close()
    assert [tp.offset for tp in committed] == [0, 0]
    # The lag chart: samples before (0) and after (7) the reset, its axes in messages and time.
    time.sleep(2.2)  # a span of time for the axis (the console also samples every 2 s)
    browser.refresh()
    chart = browser.find_element(By.ID, "lag-chart")
    assert chart.tag_name == "svg"
    labels = [t.text for t in chart.find_elements(By.TAG_NAME, "text")]
    assert "lag (messages)" in labels and labels[0] == "0"
    assert any(t.startswith(f"time ({ZONE})") for t in labels)
    ticks = chart.find_elements(By.CSS_SELECTOR, "text[data-fmt]")
    assert ticks and all(t.text == local_time(int(t.get_attribute("data-ms")))[11:19]
                         for t in ticks)
    assert_page_drawn(browser, shots / "group.png")
    assert_chart_drawn(chart, shots / "lag-chart.png")

    # Alter a topic config and delete records, each confirmed.
    browser.get(url + f"/topics/{topic}")
    submit_and_confirm(browser, "alter-config", name="retention.ms", value="120000")
    assert ["retention.ms", "120000", "DYNAMIC_TOPIC_CONFIG"] in cells(browser, "configs")
    # Configs set on the topic are marked, and the filter finds them.
    overridden = browser.find_elements(By.CSS_SELECTOR, "#configs tr.override td:first-child")
    assert [td.text for td in overridden] == ["retention.ms"]
    box = browser.find_element(By.ID, "configs-filter")
    box.find_element(By.CSS_SELECTOR, "input[type=search]").send_keys("RETENTION")
    shown = [r[0] for r in cells(browser, "configs") if r[0]]
    assert shown and all("retention" in n for n in shown) and "cleanup.policy" not in shown
    box.find_element(By.CSS_SELECTOR, "input[type=checkbox]").click()
    assert [r[0] for r in cells(browser, "configs") if r[0]] == ["retention.ms"]
    assert box.find_element(By.CLASS_NAME, "shown").text.startswith("1 of ")
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
    browser.get(url + "/topics")
    click(browser, browser.find_element(By.LINK_TEXT, "Create topic"))
    submit_and_confirm(browser, "create-topic", name=created, partitions=3,
                       configs="cleanup.policy=compact")
    assert len(cells(browser, "partitions")) == 3
    assert len(wait_for_topic(admin, created, 3).partitions) == 3
    browser.get(url + "/create-topic")
    submit_and_confirm(browser, "create-topic", name=created, partitions=1)
    assert "already exists" in browser.find_element(By.ID, "error").text
    browser.get(url + f"/topics?filter={created}")
    assert [r[0] for r in cells(browser, "topics")] == [created]

    browser.get(url + f"/brokers/{b.node_id}")
    configs = {r[0]: r for r in cells(browser, "configs")}
    assert configs["log.dirs"][2] == "STATIC_BROKER_CONFIG" and configs["log.dirs"][3] == "no"
    assert configs["log.retention.hours"][3] == "yes"
    assert_page_drawn(browser, shots / "broker.png")
    assert sorted(p.name for p in shots.iterdir()) == [
        "broker.png", "cluster.png", "group.png", "lag-chart.png", "messages.png", "topic.png"]


# -- daily work: every partition at once, lists with totals, actions, security, 800 px --------
def test_console_daily_work(broker, console, browser, shots):
    b, url = broker, console
    topic = create_topic(b.bootstrap, unique_topic("web-all"), partitions=3)
    p = producer(b.bootstrap)
    base = int(time.time() * 1000) - 100_000
    for i in range(30):  # times increase with i, spread over the three partitions
        value = b"needle in value" if i == 17 else json.dumps({"i": i}).encode()
        p.produce(topic, key=f"k{i}".encode(), value=value, partition=i % 3, timestamp=base + i)
    flush_all(p)

    # Every partition at once, newest first, ten a page, to the last page.
    browser.get(url + f"/topics/{topic}/messages?limit=10")
    seen = []
    for page in range(3):
        rows = cells(browser, "messages")
        assert [r[3] for r in rows] == [f"k{i}" for i in range(29 - 10 * page, 19 - 10 * page,
                                                               -1)]
        assert {r[0] for r in rows} == {"0", "1", "2"}
        seen += rows
        if page < 2:
            assert browser.find_element(By.ID, "next").text == "Older \u2192"
            click(browser, browser.find_element(By.ID, "next"))
    assert not browser.find_elements(By.ID, "next") and len(seen) == 30
    # Compact rows: one line each.
    browser.get(url + f"/topics/{topic}/messages?limit=30")
    heights = browser.execute_script(
        "return [...document.querySelectorAll('#messages tbody tr')].map(r => r.offsetHeight)")
    assert len(heights) == 30 and max(heights) <= 32, heights
    assert_page_drawn(browser, shots / "messages-all.png")
    # Oldest first and from a time, in every partition; a search in values.
    browser.get(url + f"/topics/{topic}/messages?seek=oldest&limit=4")
    assert [r[3] for r in cells(browser, "messages")] == ["k0", "k1", "k2", "k3"]
    click(browser, browser.find_element(By.ID, "next"))
    assert [r[3] for r in cells(browser, "messages")] == ["k4", "k5", "k6", "k7"]
    browser.get(url + f"/topics/{topic}/messages?seek=timestamp&timestamp={base + 25}")
    assert [r[3] for r in cells(browser, "messages")] == [f"k{i}" for i in range(25, 30)]
    browser.get(url + f"/topics/{topic}/messages?q=NEEDLE")
    assert [r[3] for r in cells(browser, "messages")] == ["k17"]
    assert "30 looked at" in browser.find_element(By.ID, "count").text
    # Live: the newest page follows what is produced.
    browser.get(url + f"/topics/{topic}/messages?live=1&limit=5")
    assert cells(browser, "messages")[0][3] == "k29"
    p.produce(topic, key=b"k30", value=b"late", partition=1)
    flush_all(p)
    newest_key = "return document.querySelector('#messages tbody td:nth-child(4)').textContent"
    WebDriverWait(browser, 15).until(lambda d: d.execute_script(newest_key) == "k30")

    # A group that committed on partition 0 only: the others lag by their whole logs.
    group = unique_topic("web-partial")
    c = consumer(b.bootstrap, **{"group.id": group})
    c.commit(offsets=[TopicPartition(topic, 0, 4)], asynchronous=False)
    c.close()
    browser.get(url + f"/groups/{group}")
    lag = cells(browser, "lag")
    assert [r[:5] for r in lag] == [[topic, "0", "4", "10", "6"], [topic, "1", "-", "11", "11"],
                                    [topic, "2", "-", "10", "10"]]
    assert "27\ntotal lag (messages)" in browser.find_element(By.ID, "stats").text
    assert f"{b.node_id}\ncoordinator" in browser.find_element(By.ID, "stats").text
    browser.get(url + "/groups")
    assert {r[0]: r for r in cells(browser, "groups")}[group] == [
        group, "Empty", "0", topic, "27", str(b.node_id)]
    assert_page_drawn(browser, shots / "groups.png")

    # The topics list counts records and bytes.
    browser.get(url + f"/topics?filter={topic}")
    (row,) = cells(browser, "topics")
    assert row[:5] == [topic, "3", "1", "0", "31"] and row[5].endswith(("B", "KiB"))
    assert_page_drawn(browser, shots / "topics.png")

    # Produce, add partitions, delete the topic: each confirmed, each checked with a client.
    browser.get(url + f"/topics/{topic}")
    text = submit_and_confirm(browser, "produce", partition=2, key="typed",
                              value='{"from": "console"}', headers="source=web")
    assert text == f"Produce a record (19 bytes) to {topic}, partition 2?"
    assert browser.find_element(By.ID, "flash").text == "produced to partition 2 at offset 10"
    (got,) = read_partition(b.bootstrap, topic, 2, 11)[10:]
    assert (got.key(), got.value(), got.headers()) == (b"typed", b'{"from": "console"}',
                                                       [("source", b"web")])
    submit_and_confirm(browser, "add-partitions", count=2)
    assert "INVALID_PARTITIONS" in browser.find_element(By.ID, "error").text or \
        "partitions" in browser.find_element(By.ID, "error").text
    browser.get(url + f"/topics/{topic}")
    text = submit_and_confirm(browser, "add-partitions", count=4)
    assert text == f"Increase the partitions of {topic} to 4?"
    assert len(cells(browser, "partitions")) == 4
    admin = admin_client(b.bootstrap)
    assert len(wait_for_topic(admin, topic, 4).partitions) == 4
    assert_page_drawn(browser, shots / "topic-actions.png")
    actions = browser.find_element(By.CLASS_NAME, "actions")
    browser.execute_script("arguments[0].scrollIntoView()", actions)
    (shots / "actions.png").write_bytes(actions.screenshot_as_png)
    assert len(actions.find_elements(By.CLASS_NAME, "action")) == 5
    tops = {a.rect["y"] for a in actions.find_elements(By.CLASS_NAME, "action")}
    assert len(tops) < 5, "the actions stand side by side in a wide window"
    text = submit_and_confirm(browser, "delete-topic")
    assert text == f"Delete topic {topic} and all its records?"
    assert browser.find_element(By.ID, "flash").text == f"topic {topic} deleted"
    wait_for_topic_gone(admin, topic)
    # A change asked by another site's page is refused.
    other = create_topic(b.bootstrap, unique_topic("web-csrf"))
    forged = httpx.post(url + f"/topics/{other}/delete", data={"confirm": "yes"},
                        headers={"Origin": "http://evil.example"}, timeout=10)
    assert forged.status_code == 403
    assert other in admin.list_topics(timeout=10).topics
    proxied = httpx.post(url + f"/topics/{other}/delete", timeout=10, headers={
        "Origin": "https://console.example", "X-Forwarded-Host": "console.example"})
    assert proxied.status_code == 200 and "Delete topic" in proxied.text  # the confirmation

    # Security: ACLs (this broker has no authorizer), SCRAM users, client quotas.
    browser.get(url + "/acls")
    assert "No Authorizer is configured" in browser.find_element(By.ID, "acls-error").text
    assert browser.find_element(By.CSS_SELECTOR, "header nav a.active").text == "Security"
    user = unique_topic("web-user")
    browser.get(url + "/users")
    submit_and_confirm(browser, "add-user", user=user, password="s3cret", iterations=4096)
    assert [user, "SCRAM-SHA-256", "4096"] in [r[:3] for r in cells(browser, "users")]
    assert_page_drawn(browser, shots / "users.png")
    browser.get(url + "/quotas")
    submit_and_confirm(browser, "set-quota", entity_name=user, value="1048576")
    assert [f"user-principal '{user}'", "producer_byte_rate", "1048576"] in \
        cells(browser, "quotas")
    submit_and_confirm(browser, "set-quota", entity_name=user, value="")
    assert not [r for r in cells(browser, "quotas") if user in r[0]]
    browser.get(url + "/users")
    delete = [f for f in browser.find_elements(By.CSS_SELECTOR, "#users form")
              if user in f.find_element(By.XPATH, "../..").text][0]
    click(browser, delete.find_element(By.TAG_NAME, "button"))
    click(browser, browser.find_element(By.ID, "confirm"))
    assert user not in [r[0] for r in cells(browser, "users")]

    # An 800 px window: every page fits its width.
    p.produce(other, key=b"a-rather-long-key-" * 3, value=json.dumps(
        {"order": 7, "lines": [{"sku": f"sku-{i}", "qty": i} for i in range(12)]}).encode(),
        headers=[("trace-id", b"0af7651916cd43dd8448eb211c80319c"), ("source", b"web")])
    flush_all(p)
    browser.set_window_size(800, 1000)
    try:
        for name, path in [("topics", f"/topics?filter={other}"), ("topic", f"/topics/{other}"),
                           ("messages", f"/topics/{other}/messages"), ("groups", "/groups"),
                           ("group", f"/groups/{group}"), ("broker", f"/brokers/{b.node_id}"),
                           ("acls", "/acls"), ("quotas", "/quotas"), ("cluster", "/"),
                           ("schemas", "/schemas")]:
            browser.get(url + path)
            assert_page_drawn(browser, shots / f"800-{name}.png")
    finally:
        browser.set_window_size(1400, 1000)


def test_console_acls_on_a_broker_with_an_authorizer(broker_factory, browser, tmp_path, shots):
    b = broker_factory({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                        "allow.everyone.if.no.acl.found": "true"})
    proc, url = _start_console(b.bootstrap, tmp_path / "console.log")
    try:
        browser.get(url + "/acls")
        assert cells(browser, "acls") == [["none"]]
        text = submit_and_confirm(browser, "add-acl", principal="User:alice", operation=3,
                                  resource_name="orders", pattern=4)
        assert text == "Add the ACL User:alice from *: Allow Read on Topic orders (PREFIXED)?"
        assert browser.find_element(By.ID, "flash").text == "ACL added"
        assert [r[:7] for r in cells(browser, "acls")] == [
            ["User:alice", "*", "Read", "Allow", "Topic", "orders", "PREFIXED"]]
        admin = admin_client(b.bootstrap)
        (got,) = admin.describe_acls(AclBindingFilter(
            ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
            AclPermissionType.ANY)).result(15)
        assert (got.principal, got.name, got.operation, got.resource_pattern_type) == (
            "User:alice", "orders", AclOperation.READ, ResourcePatternType.PREFIXED)
        assert_page_drawn(browser, shots / "acls.png")
        # The broker's refusal, in one line.
        browser.get(url + "/acls")
        submit_and_confirm(browser, "add-acl", principal="alice", resource_name="orders")
        error = browser.find_element(By.ID, "error").text
        browser.get(url + "/acls")
        assert error.startswith("error code ") and "\n" not in error and "alice" in error, error
        assert [o.text for o in Select(browser.find_element(
            By.CSS_SELECTOR, "#add-acl select[name=pattern]")).options] == ["LITERAL",
                                                                             "PREFIXED"]
        browser.get(url + "/acls")
        click(browser, browser.find_element(By.CSS_SELECTOR, "#acls form button"))
        assert browser.find_element(By.ID, "confirm-text").text.startswith(
            "Delete the ACL User:alice from *: Allow Read on Topic orders")
        click(browser, browser.find_element(By.ID, "confirm"))
        assert cells(browser, "acls") == [["none"]]
        assert admin.describe_acls(AclBindingFilter(
            ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
            AclPermissionType.ANY)).result(15) == []
        # The cluster gone: a page says so in one line.
        b.stop(timeout=10)
        browser.get(url + "/topics")
        assert browser.find_element(By.ID, "error").text.startswith(
            f"cluster at {b.bootstrap} unreachable: ")
    finally:
        proc.terminate()
        proc.wait(10)


# -- the Schema Registry's pages and decoded messages ----------------------------------------
ADDRESS = {"type": "record", "name": "Address", "namespace": "shop",
           "fields": [{"name": "city", "type": "string"}]}
ORDER = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9,
                                "scale": 2}},
    {"name": "ship_to", "type": "shop.Address"},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}
ITEM = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Item", "type": "object",
        "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
        "required": ["sku"]}
REFERENCE_SCHEMA = {"type": "record", "name": "Payment", "namespace": "reference", "doc":
                    "A fixed schema whose page is compared with a reference image",
                    "fields": [{"name": "id", "type": "string"},
                               {"name": "cents", "type": "long", "default": 0},
                               {"name": "method", "type": {"type": "enum", "name": "Method",
                                                           "symbols": ["CARD", "CASH"]}},
                               {"name": "note", "type": ["null", "string"],
                                "default": None}]}


SHIPMENT_PROTO = """syntax = "proto3";
package {package};
import "google/protobuf/timestamp.proto";
message Unused {{ int32 x = 1; }}
message Shipment {{
  message Parcel {{
    string label = 1;
    repeated int64 grams = 2;
    google.protobuf.Timestamp sent = 3;
  }}
}}
"""


def _register_parcel(client: SchemaRegistryClient, subject: str, package: str):
    """Registers ``.proto`` text whose message of interest is nested in the second top-level
    message (its message indexes are [1, 0]) and imports a well-known type; answers that
    message's class, built from the descriptor the registry serves."""
    client.register_schema(subject, Schema(SHIPMENT_PROTO.format(package=package), "PROTOBUF"))
    fdp = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(
        client.get_version(subject, 1, fmt="serialized").schema.schema_str))
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(
        f"{package}.Shipment.Parcel"))


def _produce(bootstrap, topic, items):
    """``items``: (key bytes, value bytes) produced in order to partition 0."""
    p = producer(bootstrap)
    for k, v in items:
        p.produce(topic, key=k, value=v, partition=0)
    flush_all(p)


def test_schemas_and_decoded_messages(broker, schema_registry, console, browser, shots):
    url, sr = console, schema_registry.url
    client = SchemaRegistryClient({"url": sr})
    avro_topic, json_topic, proto_topic = (
        create_topic(broker.bootstrap, unique_topic(f"web-{kind}")) for kind in
        ("avro", "json", "proto"))

    def ctx(topic, field=MessageField.VALUE):
        return SerializationContext(topic, field)

    # Avro, the value's schema referencing another subject; an Avro string key.
    address_subject = f"{avro_topic}-address"
    client.register_schema(address_subject, Schema(json.dumps(ADDRESS), "AVRO"))
    order_schema = Schema(json.dumps(ORDER), "AVRO",
                          [SchemaReference("shop.Address", address_subject, 1)])
    order_id = client.register_schema(f"{avro_topic}-value", order_schema)
    values = AvroSerializer(client, order_schema, conf={"auto.register.schemas": False,
                                                        "use.latest.version": True})
    keys = AvroSerializer(client, json.dumps("string"))
    at = datetime.datetime(2026, 11, 25, 8, 30, tzinfo=datetime.timezone.utc)
    _produce(broker.bootstrap, avro_topic, [
        (keys("order-1", ctx(avro_topic, MessageField.KEY)),
         values({"id": 1, "amount": decimal.Decimal("12.34"),
                 "ship_to": {"city": "Pune"}, "at": at}, ctx(avro_topic))),
        (b"plain-key", b"plain text"),
        (None, b"\x00\x7f\xff\xff\xf0not a registered schema")])
    # JSON Schema, two versions.
    item_v1 = JSONSerializer(json.dumps(ITEM), client)
    _produce(broker.bootstrap, json_topic, [(None, item_v1({"sku": "a-1", "qty": 2},
                                                           ctx(json_topic)))])
    item2 = {**ITEM, "properties": {"sku": {"type": "string"}}}  # qty removed: BACKWARD
    client.register_schema(f"{json_topic}-value", Schema(json.dumps(item2), "JSON"))
    # Protobuf: a nested message, a well-known import.
    Parcel = _register_parcel(client, f"{proto_topic}-value", f"web{proto_topic[-6:]}")
    parcel = Parcel(label="box", grams=[250, 750])
    parcel.sent.seconds = 1_780_000_000
    proto_values = ProtobufSerializer(Parcel, client, {"use.deprecated.format": False})
    _produce(broker.bootstrap, proto_topic, [(None, proto_values(parcel, ctx(proto_topic)))])
    # Compatibility: the Avro value subject sets its own level, the others take the global.
    assert httpx.put(f"{sr}/config/{avro_topic}-value", json={"compatibility": "FULL"},
                     timeout=10).status_code == 200

    # The message browser decodes each format and names the schema.
    browser.get(url + f"/topics/{avro_topic}/messages?seek=oldest")
    rows = browser.find_elements(By.CSS_SELECTOR, "#messages tbody tr")
    key_cell, value_cell = rows[0].find_elements(By.TAG_NAME, "td")[3:5]
    assert key_cell.find_element(By.CLASS_NAME, "schema-of").text.startswith(
        f"AVRO {avro_topic}-key v1 · id ")
    assert json.loads(key_cell.find_element(By.CSS_SELECTOR, ".json").text) == "order-1"
    assert value_cell.find_element(By.CLASS_NAME, "schema-of").text == \
        f"AVRO {avro_topic}-value v1 · id {order_id}"
    assert json.loads(content(value_cell.find_element(By.CSS_SELECTOR, "pre.json"))) == {
        "id": 1, "amount": "12.34", "ship_to": {"city": "Pune"}, "at": at.isoformat()}
    plain = rows[1].find_elements(By.TAG_NAME, "td")
    assert plain[3].text == "plain-key" and plain[4].text == "plain text"
    unknown = rows[2].find_elements(By.TAG_NAME, "td")[4]
    assert "Schema 2147483632 not found" in unknown.find_element(By.CLASS_NAME, "note").text
    assert content(unknown.find_element(By.CSS_SELECTOR, "pre.hex")).startswith(
        "00 7f ff ff f0")
    assert_page_drawn(browser, shots / "messages-avro.png")

    browser.get(url + f"/topics/{json_topic}/messages")
    value_cell = browser.find_elements(By.CSS_SELECTOR, "#messages td")[4]
    assert value_cell.find_element(By.CLASS_NAME, "schema-of").text.startswith(
        f"JSON {json_topic}-value v1 · id ")
    assert json.loads(content(value_cell.find_element(By.CSS_SELECTOR, "pre.json"))) == {
        "sku": "a-1", "qty": 2}

    browser.get(url + f"/topics/{proto_topic}/messages")
    value_cell = browser.find_elements(By.CSS_SELECTOR, "#messages td")[4]
    what = value_cell.find_element(By.CLASS_NAME, "schema-of").text
    assert what.startswith(f"PROTOBUF {proto_topic}-value v1 · id ")
    assert what.endswith(f"{Parcel.DESCRIPTOR.full_name}")
    assert json.loads(content(value_cell.find_element(By.CSS_SELECTOR, "pre.json"))) == {
        "label": "box", "grams": ["250", "750"], "sent": "2026-05-28T20:26:40Z"}
    # The schema's id leads to the schema and where it is registered.
    click(browser, value_cell.find_element(By.PARTIAL_LINK_TEXT, "id "))
    assert cells(browser, "uses") == [[f"{proto_topic}-value", "1"]]
    assert "message Shipment" in browser.find_element(By.CSS_SELECTOR, "pre.proto").text

    # The topic names its schemas.
    browser.get(url + f"/topics/{avro_topic}")
    assert [r[:4] for r in cells(browser, "topic-schemas")] == [
        ["key", f"{avro_topic}-key", "1", "AVRO"], ["value", f"{avro_topic}-value", "1", "AVRO"]]

    # The subjects, with their type, latest version and compatibility level.
    browser.get(url + "/schemas")
    assert browser.find_element(By.CSS_SELECTOR, "header nav a.active").text == "Schema Registry"
    subjects = {r[0]: r for r in cells(browser, "subjects")}
    assert subjects[f"{avro_topic}-value"][1:] == ["AVRO", "1", str(order_id), "FULL"]
    assert subjects[f"{json_topic}-value"][1:3] == ["JSON", "2"]
    assert subjects[f"{json_topic}-value"][4] == "BACKWARD (global)"
    assert subjects[f"{proto_topic}-value"][1] == "PROTOBUF"
    assert subjects[address_subject][1:3] == ["AVRO", "1"]
    assert "BACKWARD\nglobal compatibility" in browser.find_element(By.ID, "stats").text
    assert_page_drawn(browser, shots / "schemas.png")
    browser.get(url + f"/schemas?filter={json_topic}")
    assert [r[0] for r in cells(browser, "subjects")] == [f"{json_topic}-value"]

    # A subject: its versions, newest first, and its latest schema pretty-printed.
    click(browser, browser.find_element(By.LINK_TEXT, f"{json_topic}-value"))
    assert [r[0] for r in cells(browser, "versions")] == ["2", "1"]
    assert "2\nlatest version" in browser.find_element(By.ID, "stats").text
    assert json.loads(browser.find_element(By.CSS_SELECTOR, "pre.json.block").text) == item2
    assert_page_drawn(browser, shots / "subject.png")

    # A version: its schema, references, and the schemas that reference it.
    browser.get(url + f"/schemas/{avro_topic}-value/versions/1")
    assert json.loads(browser.find_element(By.CSS_SELECTOR, "pre.json.block").text) == ORDER
    assert cells(browser, "references") == [["shop.Address", address_subject, "1"]]
    assert "FULL\ncompatibility" in browser.find_element(By.ID, "stats").text
    click(browser, browser.find_elements(By.CSS_SELECTOR, "#references a")[-1])
    assert browser.find_element(By.ID, "referenced-by").text == \
        f"Referenced by schema ids: {order_id}"
    browser.get(url + f"/schemas/{proto_topic}-value/versions/latest")
    proto = browser.find_element(By.CSS_SELECTOR, "pre.proto")
    assert "message Parcel" in proto.text and 'import "google/protobuf/timestamp.proto";' in \
        proto.text
    assert "message" in [k.text for k in proto.find_elements(By.CLASS_NAME, "kw")]
    assert_page_drawn(browser, shots / "version-protobuf.png")
    browser.get(url + "/schemas/no-such-subject")
    assert "Subject 'no-such-subject' not found" in browser.find_element(By.ID, "error").text

    # A fixed schema's page against the reference images.
    reference = "console-reference-value"
    client.register_schema(reference, Schema(json.dumps(REFERENCE_SCHEMA), "AVRO"))
    browser.get(url + f"/schemas/{reference}/versions/1")
    assert_page_drawn(browser, shots / "version-avro.png")
    assert_like_reference(browser.find_element(By.TAG_NAME, "header"), "header.png", shots)
    assert_like_reference(browser.find_element(By.CSS_SELECTOR, "pre.json.block"),
                          "avro-schema.png", shots)


# -- without a registry, and with one that does not answer -----------------------------------
def test_console_without_a_registry(broker, console_factory, browser, tmp_path, shots):
    topic = create_topic(broker.bootstrap, unique_topic("web-noreg"))
    _produce(broker.bootstrap, topic, [(None, b"\x00\x00\x00\x00\x01\x06abc"),
                                       (b"k", b'{"a": 1}')])

    plain = console_factory()
    browser.get(plain + "/schemas")
    assert "No Schema Registry is configured" in browser.find_element(By.ID, "no-registry").text
    assert_page_drawn(browser, shots / "no-registry.png")
    browser.get(plain + f"/topics/{topic}/messages?seek=oldest")
    rows = browser.find_elements(By.CSS_SELECTOR, "#messages tbody tr")
    assert content(rows[0].find_element(By.CSS_SELECTOR, "pre.hex")) == \
        "00 00 00 00 01 06 61 62 63"
    assert not browser.find_elements(By.CLASS_NAME, "schema-of")
    assert json.loads(content(rows[1].find_element(By.CSS_SELECTOR, "pre.json"))) == {"a": 1}
    browser.get(plain + f"/topics/{topic}")
    assert not browser.find_elements(By.ID, "topic-schemas")

    # schema.registry.url from --command-config, a registry that does not answer.
    dead = free_port()
    config = tmp_path / "console.properties"
    config.write_text(f"schema.registry.url=http://127.0.0.1:{dead}\n")
    down = console_factory("--command-config", str(config))
    browser.get(down + "/schemas")
    assert f"Schema Registry at http://127.0.0.1:{dead} unreachable" in \
        browser.find_element(By.ID, "error").text
    browser.get(down + f"/topics/{topic}/messages?seek=oldest")
    rows = browser.find_elements(By.CSS_SELECTOR, "#messages tbody tr")
    assert "unreachable" in rows[0].find_element(By.CLASS_NAME, "note").text
    assert content(rows[0].find_element(By.CSS_SELECTOR, "pre.hex")).startswith(
        "00 00 00 00 01")
    assert json.loads(content(rows[1].find_element(By.CSS_SELECTOR, "pre.json"))) == {"a": 1}
    browser.get(down + "/")
    assert "unreachable\nschema subjects" in browser.find_element(By.ID, "stats").text
    browser.get(down + f"/topics/{topic}")
    assert "unreachable" in browser.find_element(By.ID, "topic-schemas").text
    assert cells(browser, "partitions")[0][5] == "2"


def test_console_connect_page(console_factory, browser, tmp_path, shots):
    """The Connect page on a Connect REST server (josefk.connect.rest over the dict-backed
    herder of testkit): the connectors, a connector's tasks with a failed task's trace, its
    offsets and config, and pause / stop / reset offsets / task restart / delete confirmed in
    the browser and carried out through the REST API."""
    herder = DictHerder("http://worker-7:8083")
    herder.configs = {"files-in": {"connector.class": FILE_SOURCE, "tasks.max": "2",
                                   "file": "/var/in.txt", "topic": "lines",
                                   "name": "files-in"},
                      "files-out": {"connector.class": FILE_SINK, "tasks.max": "1",
                                    "file": "/var/out.txt", "topics": "lines",
                                    "name": "files-out"}}
    herder.states = {"files-in": "RUNNING", "files-out": "RUNNING"}
    herder.failed_tasks = {"files-in": {1}}
    herder.topics = {"files-in": ["lines"]}
    herder.offsets = {"files-in": [{"partition": {"filename": "/var/in.txt"},
                                    "offset": {"position": 42}}]}
    loop = Loop()
    server = RestServer(["http://127.0.0.1:0"], herder)
    try:
        connect_url = loop.run(server.start())[0]
        url = console_factory("--connect-url", connect_url)
        browser.get(url + "/connect")
        assert cells(browser, "connectors") == [
            ["files-in", "source", "RUNNING", "1/2 1 failed", "http://worker-7:8083",
             FILE_SOURCE],
            ["files-out", "sink", "RUNNING", "1/1", "http://worker-7:8083", FILE_SINK]]
        assert connect_url in browser.find_element(By.ID, "connect-url").text
        assert_page_drawn(browser, shots / "connect.png")

        click(browser, browser.find_element(By.LINK_TEXT, "files-in"))
        tasks = cells(browser, "tasks")
        assert [t[:3] for t in tasks] == [["0", "RUNNING", "http://worker-7:8083"],
                                          ["1", "FAILED", "http://worker-7:8083"]]
        trace = browser.find_elements(By.CSS_SELECTOR, "#tasks details.rec")
        assert len(trace) == 1 and "ConnectException: boom" in content(trace[0])
        assert cells(browser, "offsets") == [['{"filename": "/var/in.txt"}',
                                              '{"position": 42}']]
        assert ["file", "/var/in.txt"] in cells(browser, "config")
        assert_page_drawn(browser, shots / "connector.png")

        assert submit_and_confirm(browser, "pause") == \
            "Pause connector files-in and its tasks?"
        assert browser.find_element(By.ID, "flash").text == "Pausing files-in"
        assert browser.find_element(By.ID, "state").text == "PAUSED"
        submit_and_confirm(browser, "restart", mode="failed")
        assert ("restart_connector", "files-in", True, True) in herder.calls
        click(browser, browser.find_element(
            By.CSS_SELECTOR, "form[action='/connect/files-in/tasks/1/restart'] button"))
        click(browser, browser.find_element(By.ID, "confirm"))
        assert herder.failed_tasks["files-in"] == set()
        assert cells(browser, "tasks")[1][1] == "PAUSED"  # no longer FAILED

        # offsets are reset only once the connector is stopped: Connect's refusal, then done
        click(browser, browser.find_element(
            By.CSS_SELECTOR, "form[action='/connect/files-in/reset-offsets'] button"))
        click(browser, browser.find_element(By.ID, "confirm"))
        assert "Connectors must be in the STOPPED state" in \
            browser.find_element(By.ID, "error").text
        browser.get(url + "/connect/files-in")
        submit_and_confirm(browser, "stop")
        assert browser.find_element(By.ID, "state").text == "STOPPED"
        click(browser, browser.find_element(
            By.CSS_SELECTOR, "form[action='/connect/files-in/reset-offsets'] button"))
        click(browser, browser.find_element(By.ID, "confirm"))
        assert browser.find_element(By.ID, "flash").text == "Offsets of files-in reset"
        assert cells(browser, "offsets") == [["none"]]

        browser.get(url + "/connect/files-out")
        submit_and_confirm(browser, "delete")
        assert browser.find_element(By.ID, "flash").text == "Deleted files-out"
        assert [r[0] for r in cells(browser, "connectors")] == ["files-in"]
        assert "files-out" not in herder.configs
    finally:
        loop.run(server.stop())
        loop.close()

    plain = console_factory()
    browser.get(plain + "/connect")
    assert "--connect-url" in browser.find_element(By.ID, "no-connect").text
    assert_page_drawn(browser, shots / "no-connect.png")
