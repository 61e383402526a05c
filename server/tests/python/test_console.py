"""The web console (issue #45) in a real browser: Debian's Chromium, headless, driven by
Selenium, against a running chingest.

Run by server/tests/http/console.rs, which starts the server and writes the fixture
(database `console`, or `alpha` and `beta` with auth on: `cpu` with hosts a and b, 30
points each, fields usage float, n integer, state string, up boolean; `mem` with one
point). Environment: CHINGEST_URL, CHROMIUM, CHROMEDRIVER, CHROMIUM_PROFILE; with auth
CHINGEST_USER/CHINGEST_PASSWORD (reads `alpha` only) and CHINGEST_ADMIN/
CHINGEST_ADMIN_PASSWORD. Optional: CHINGEST_CONSOLE_SCREENSHOTS=<dir> saves a PNG of
each view there, CHINGEST_CONSOLE_REPORT=<file> writes the page weight and the time to
the first result as JSON.

    python test_console.py -v OpenConsole        # or ConsoleWithAuth
"""
import base64
import json
import os
import re
import tempfile
import threading
import time
import unittest
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.select import Select
from selenium.webdriver.support.ui import WebDriverWait

URL = os.environ["CHINGEST_URL"]
SHOTS = os.environ.get("CHINGEST_CONSOLE_SCREENSHOTS")
REPORT = os.environ.get("CHINGEST_CONSOLE_REPORT")
WAIT = 45  # seconds: a loaded 2-core machine

# What the page's policy refusing something, or a script failing, logs.
BAD_LOG = ("Content Security Policy", "Trusted Type", "TrustedHTML", "Uncaught", "TypeError", "ReferenceError")

TABLES = """return [...document.querySelectorAll(arguments[0] + ' table.grid')].map((t) => ({
  caption: t.caption ? t.caption.textContent : '',
  head: [...t.querySelectorAll('thead th')].map((th) => th.textContent),
  rows: [...t.querySelectorAll('tbody tr')].map((tr) => [...tr.children].map((td) => td.textContent)),
}));"""

# The first chart's canvas: painted pixels, and the pixels of each series' colour.
CHART_PIXELS = """const el = document.querySelector(arguments[0] + ' .chart');
if (!el || !el.uplot) return null;
const canvas = el.querySelector('canvas');
const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
const colors = el.dataset.colors.split(' ').map((c) => [1, 3, 5].map((i) => parseInt(c.slice(i, i + 2), 16)));
let painted = 0;
const hits = colors.map(() => 0);
for (let i = 0; i < data.length; i += 4) {
  if (data[i + 3] === 0) continue;
  painted++;
  colors.forEach((c, k) => {
    if (data[i + 3] > 200 && Math.abs(data[i] - c[0]) < 12 && Math.abs(data[i + 1] - c[1]) < 12
        && Math.abs(data[i + 2] - c[2]) < 12) hits[k]++;
  });
}
return {painted, hits, series: Number(el.dataset.series), width: canvas.width, height: canvas.height,
  legend: [...el.querySelectorAll('.u-legend .u-series')].slice(1).map((s) => s.querySelector('.u-label').textContent),
  x: [el.uplot.scales.x.min, el.uplot.scales.x.max]};"""


def start_browser():
    o = webdriver.ChromeOptions()
    o.binary_location = os.environ["CHROMIUM"]
    profile = tempfile.mkdtemp(dir=os.environ.get("CHROMIUM_PROFILE"))
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1280,1000", "--force-device-scale-factor=1",
                 "--lang=en-US", f"--user-data-dir={profile}"):
        o.add_argument(flag)
    o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(os.environ["CHROMEDRIVER"]), options=o)


class ConsoleCase(unittest.TestCase):
    db = "console"

    @classmethod
    def setUpClass(cls):
        cls.d = start_browser()

    @classmethod
    def tearDownClass(cls):
        cls.d.quit()

    def setUp(self):
        self.d.get_log("browser")  # what earlier tests left
        self.allowed_errors = ()

    def tearDown(self):
        bad = [e["message"] for e in self.d.get_log("browser")
               if any(b in e["message"] for b in BAD_LOG) and not any(a in e["message"] for a in self.allowed_errors)]
        self.assertEqual(bad, [], "the page logged errors")

    # -- helpers ---------------------------------------------------------------------
    def until(self, cond, what):
        # A view that re-renders (Watch, every 2 s) may replace an element between its
        # lookup and its read: that is "not yet", not a failure.
        return WebDriverWait(self.d, WAIT, poll_frequency=0.05,
                             ignored_exceptions=(StaleElementReferenceException,)).until(
            lambda _: cond(), f"waiting for {what}")

    def text_now(self, css):
        """The text of the element `css` selects, read again if a re-render replaced it."""
        for _ in range(100):
            try:
                return self.el(css).text
            except StaleElementReferenceException:
                time.sleep(0.02)
        return self.el(css).text

    def open(self, view=""):
        """Loads the page afresh (a fragment alone would not reload it) on `view`."""
        self.d.get("about:blank")
        self.d.get(f"{URL}/#{view}")
        self.until(lambda: self.d.execute_script("return document.body.dataset.ready === 'true'"), "the page")

    def el(self, css):
        return self.d.find_element(By.CSS_SELECTOR, css)

    def els(self, css):
        return self.d.find_elements(By.CSS_SELECTOR, css)

    def shot(self, name):
        if SHOTS:
            os.makedirs(SHOTS, exist_ok=True)
            time.sleep(0.3)  # let the last frame paint
            self.d.save_screenshot(os.path.join(SHOTS, f"{name}.png"))

    def run_query(self, lang, text, db=None, keyboard=True):
        """Runs `text` in the Query view (already open); returns the status line."""
        Select(self.el("#q-lang")).select_by_value(lang)
        Select(self.el("#q-db")).select_by_value(self.db if db is None else db)
        before = self.el("#q-results").get_attribute("data-rendered-at")
        editor = self.el("#q-text")
        editor.clear()
        editor.send_keys(text)
        if keyboard:
            editor.send_keys(Keys.CONTROL, Keys.ENTER)
        else:
            self.el("#q-run").click()
        self.until(lambda: self.el("#q-results").get_attribute("data-rendered-at") not in (None, before), "the result")
        return self.el("#q-status").text

    def tables(self, scope="#q-results"):
        return self.d.execute_script(TABLES, scope)

    def errors(self, scope="#q-results"):
        return [e.text for e in self.els(f"{scope} .note.error")]

    def show_chart(self):
        self.el("#q-results button[data-tab=chart]").click()
        return self.until(lambda: self.d.execute_script(CHART_PIXELS, "#q-results"), "the chart")

    def assert_chart(self, want_series):
        # The first frame is drawn once the chart has its width.
        chart = self.until(lambda: (lambda c: c if c and c["painted"] > 2000 and min(c["hits"]) > 30 else None)(
            self.d.execute_script(CHART_PIXELS, "#q-results")), "every series drawn")
        self.assertEqual(chart["series"], want_series, chart)
        self.assertEqual(len(chart["legend"]), want_series, chart)
        self.assertEqual(len(chart["hits"]), want_series, chart)
        return chart

    def sign_in(self, user, password):
        self.open()
        self.until(lambda: self.el("#login").is_displayed(), "the sign-in form")
        self.el("#login-user").send_keys(user)
        self.el("#login-password").send_keys(password)
        self.el("#login-submit").click()

    def db_names(self):
        return [o.get_attribute("value") for o in self.els("#q-db option") if o.get_attribute("value")]


class OpenConsole(ConsoleCase):
    """Auth off: every view against database `console`."""

    def test_influxql_query_shows_a_table(self):
        self.open("query")
        status = self.run_query("influxql", "SELECT usage, n FROM cpu WHERE host = 'a' ORDER BY time LIMIT 3")
        self.assertIn("InfluxQL", status)
        [t] = self.tables()
        self.assertEqual(t["head"], ["time", "usage", "n"])
        self.assertEqual([r[1:] for r in t["rows"]], [["0", "0"], ["1.5", "1"], ["3", "2"]])
        self.assertRegex(t["rows"][0][0], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        # The history remembers it, in memory.
        self.assertIn("SELECT usage, n FROM cpu", self.el("#q-history").text)

    def test_sql_query_shows_a_table(self):
        self.open("query")
        self.run_query("sql", "SELECT host, count() AS points, max(usage) AS top FROM console.cpu GROUP BY host ORDER BY host",
                       keyboard=False)
        [t] = self.tables()
        self.assertEqual(t["head"], ["host", "points", "top"])
        self.assertEqual(t["rows"], [["a", "30", "43.5"], ["b", "30", "129"]])

    def test_chart_draws_every_series_and_zooms(self):
        self.open("query")
        self.run_query("influxql", "SELECT usage FROM cpu GROUP BY host")
        self.show_chart()
        chart = self.assert_chart(2)
        self.assertEqual(chart["legend"], ["cpu{host=a} usage", "cpu{host=b} usage"])
        self.shot("query")
        # Drag across the middle of the plot: the x range narrows.
        over = self.el("#q-results .u-over")
        ActionChains(self.d).move_to_element_with_offset(over, -150, 0).click_and_hold() \
            .move_by_offset(200, 0).release().perform()
        zoomed = self.until(lambda: (lambda c: c if c["x"] != chart["x"] else None)(
            self.d.execute_script(CHART_PIXELS, "#q-results")), "the zoom")
        self.assertGreater(zoomed["x"][0], chart["x"][0])
        self.assertLess(zoomed["x"][1], chart["x"][1])
        # SQL: one series per host from the string column.
        self.run_query("sql", "SELECT time, host, usage FROM console.cpu ORDER BY time")
        self.show_chart()
        self.assert_chart(2)

    def test_a_bad_query_shows_the_engines_error_where_it_happened(self):
        self.open("query")
        self.run_query("influxql", "SELECT usage FROMM cpu")
        [err] = self.errors()
        self.assertIn("error parsing query: found FROMM, expected FROM at line 1, char 14", err)
        self.assertEqual(self.el("#q-results pre.caret").text, "SELECT usage FROMM cpu\n" + " " * 13 + "^")
        self.assertEqual(self.d.execute_script("return document.getElementById('q-text').selectionStart"), 13)
        # A failing statement among good ones: its own error, under its own number.
        self.run_query("influxql", "SHOW MEASUREMENTS; SHOW RETENTION POLICIES ON nosuch")
        blocks = self.els("#q-results section.result")
        self.assertEqual(len(blocks), 2)
        names = [r[0] for r in self.tables("#q-results section.result[data-statement='0']")[0]["rows"]]
        self.assertTrue({"cpu", "mem"} <= set(names), names)
        self.assertIn("database not found: nosuch", blocks[1].text)
        self.assertIn("statement 2", blocks[1].text)
        # The engine's own error for SQL.
        self.run_query("sql", "SELECT nosuch FROM console.cpu")
        [err] = self.errors()
        self.assertIn("HTTP 400", err)
        self.assertIn("Unknown expression identifier `nosuch`", err)

    def test_the_schema_tree_lists_fields_with_types_and_queries_them(self):
        self.open("browse")
        self.el("details[data-kind=db][data-name=console] > summary").click()
        cpu = "details[data-kind=measurement][data-name=cpu]"
        self.until(lambda: self.els(cpu), "measurement cpu")
        self.assertIn("2 series", self.el(f"{cpu} > summary").text)
        self.assertIn("1 series", self.el("details[data-kind=measurement][data-name=mem] > summary").text)
        self.assertEqual([e.get_attribute("data-name") for e in self.els("li[data-kind=rp]")], ["autogen"])
        self.el(f"{cpu} > summary").click()
        self.until(lambda: self.els(f"{cpu} li[data-kind=field]"), "the fields")
        fields = {e.get_attribute("data-name"): e.get_attribute("data-type") for e in self.els(f"{cpu} li[data-kind=field]")}
        self.assertEqual(fields, {"usage": "float", "n": "integer", "state": "string", "up": "boolean"})
        self.assertEqual(self.el(f"{cpu} li[data-kind=field][data-name=usage] .badge.type").text, "float")
        self.el(f"{cpu} details[data-kind=tag][data-name=host] > summary").click()
        self.until(lambda: self.els(f"{cpu} li[data-kind=tag-value]"), "the tag values")
        self.assertEqual([e.get_attribute("data-name") for e in self.els(f"{cpu} li[data-kind=tag-value]")], ["a", "b"])
        self.shot("browse")
        # A field's chart button opens it in the Query view.
        self.el(f"{cpu} li[data-kind=field][data-name=usage] button.run").click()
        self.until(lambda: self.d.current_url.endswith("#query"), "the Query view")
        self.until(lambda: self.els("#q-results .chart"), "the chart")
        self.assert_chart(2)
        self.assertIn('SELECT "usage" FROM "cpu"', self.el("#q-text").get_attribute("value"))

    def test_an_uploaded_file_with_a_bad_line_is_answered_line_by_line(self):
        now = int(time.time())
        lines = [f"uploaded,host=x v=1 {now - 2}", "this is not line protocol", f"uploaded,host=y v=3 {now}"]
        with tempfile.NamedTemporaryFile("w", suffix=".lp", delete=False) as f:
            f.write("\n".join(lines) + "\n")
        self.open("write")
        self.until(lambda: self.db in [o.get_attribute("value") for o in self.els("#w-dbs option")], "the databases")
        self.el("#w-db").clear()
        self.el("#w-db").send_keys(self.db)
        Select(self.el("#w-precision")).select_by_value("s")
        self.el("#w-file").send_keys(f.name)
        self.el("#w-send").click()
        self.until(lambda: self.els("#w-result .note"), "the answer")
        [err] = self.errors("#w-result")
        self.assertIn("HTTP 400", err)
        self.assertIn("2 of 3 line(s) written", err)
        [t] = self.tables("#w-result")
        self.assertEqual(len(t["rows"]), 1, t)
        number, text, why = t["rows"][0]
        self.assertEqual((number, text), ("2", "this is not line protocol"))
        self.assertTrue(why, t)
        self.assertIn(f"unable to parse 'this is not line protocol': {why}", self.el("#w-result pre.raw").get_attribute("textContent"))
        self.shot("write")
        # The good lines are there.
        self.open("query")
        self.run_query("influxql", "SELECT v FROM uploaded ORDER BY time")
        [t] = self.tables()
        self.assertEqual([r[1] for r in t["rows"]], ["1", "3"])
        os.unlink(f.name)

    def test_watch_shows_the_servers_numbers_live(self):
        stop = threading.Event()

        def writer():
            i = 0
            while not stop.is_set():
                body = "\n".join(f"watch,w={i % 5} v={i + k}" for k in range(50)).encode()
                req = urllib.request.Request(f"{URL}/write?db={self.db}", data=body, method="POST")
                with urllib.request.urlopen(req, timeout=30) as r:
                    assert r.status == 204, r.status
                i += 1
                time.sleep(0.05)

        t = threading.Thread(target=writer, daemon=True)
        t.start()
        try:
            self.open("watch")
            tiles = {e.get_attribute("data-metric") for e in self.until(lambda: self.els("#w-tiles .tile"), "the tiles")}
            self.assertEqual(tiles, {"health", "ingest", "p95", "unflushed", "wal", "lag", "refusals", "quarantine"})
            value = lambda m: self.text_now(f"#w-tiles .tile[data-metric={m}] .value")
            self.until(lambda: value("ingest").endswith("pts/s") and value("ingest") != "0 pts/s", "an ingest rate")
            self.until(lambda: value("p95").endswith("ms") or value("p95").endswith(" s"), "a p95 write latency")
            self.assertEqual(value("health"), "pass")
            self.assertEqual(value("quarantine"), "0 pts")
            accepted = lambda: self.text_now("#w-tiles .tile[data-metric=ingest] .sub")
            first = accepted()
            self.until(lambda: accepted() != first, "the next refresh")
            self.until(lambda: self.els("#w-chart-rate canvas") and self.els("#w-chart-p95 canvas"), "the charts")
            samples = 6 if SHOTS else 3  # a longer line for the screenshot
            self.until(lambda: len(self.d.execute_script(
                "return document.querySelector('#w-chart-rate .chart').uplot.data[0]")) >= samples, "samples")
            self.shot("watch")
        finally:
            stop.set()
            t.join()

    def test_the_page_is_small_and_answers_fast(self):
        self.d.execute_cdp_cmd("Network.clearBrowserCache", {})
        self.open("query")
        files = self.d.execute_script("""
          const nav = performance.getEntriesByType('navigation')[0];
          return [nav, ...performance.getEntriesByType('resource').filter((e) => e.initiatorType !== 'fetch')]
            .map((e) => ({name: e.name, encoded: e.encodedBodySize, decoded: e.decodedBodySize}));""")
        origin = URL.rstrip("/")
        for f in files:
            self.assertTrue(f["name"].startswith(origin + "/"), f"loaded from elsewhere: {f}")
        self.assertGreaterEqual(len(files), 14, files)  # page, 2 stylesheets, uPlot, 10 modules, icon
        encoded = sum(f["encoded"] for f in files)
        decoded = sum(f["decoded"] for f in files)
        self.assertLess(encoded, 100_000, files)
        ready_ms = int(self.d.execute_script("return document.body.dataset.readyMs"))
        status = self.run_query("influxql", "SELECT usage FROM cpu GROUP BY host", keyboard=False)
        query_ms = int(status.split("·")[1].strip().split(" ")[0])
        drawn_ms = int(self.el("#q-results").get_attribute("data-rendered-at"))
        report = {"files": len(files), "bytes_gzip": encoded, "bytes_uncompressed": decoded,
                  "page_ready_ms": ready_ms, "first_query_ms": query_ms, "first_result_drawn_ms": drawn_ms}
        print(json.dumps(report))
        if REPORT:
            with open(REPORT, "w") as out:
                json.dump(report, out, indent=2)

    def test_the_policy_refuses_inline_code_html_strings_and_other_origins(self):
        self.open("query")
        self.allowed_errors = BAD_LOG + ("Refused to", "Failed to fetch", "example.invalid")
        got = self.d.execute_async_script("""
          const done = arguments[arguments.length - 1];
          const out = {seen: []};
          document.addEventListener('securitypolicyviolation', (e) => out.seen.push(e.effectiveDirective));
          try { document.getElementById('q-status').innerHTML = '<b>x</b>'; out.html = 'set'; } catch (e) { out.html = e.name; }
          try {
            const s = document.createElement('script');
            s.src = 'data:text/javascript,document.body.dataset.inline = "ran"';
            document.head.append(s);
          } catch (e) { /* Trusted Types refuse the string */ }
          const img = document.createElement('img');
          img.src = 'http://example.invalid/pixel.png';
          document.body.append(img);
          document.getElementById('q-status').setAttribute('style', 'color: red');
          fetch('http://example.invalid/').then(() => { out.fetch = 'ran'; }, (e) => { out.fetch = e.name; });
          setTimeout(() => { out.inline = document.body.dataset.inline || 'refused'; done(out); }, 1000);""")
        self.assertEqual((got["html"], got["inline"], got["fetch"]), ("TypeError", "refused", "TypeError"), got)
        self.assertTrue({"img-src", "connect-src", "style-src-attr"} <= set(got["seen"]), got)


    def test_the_pages_parsers_give_known_answers(self):
        """The pure functions behind the views, run in the page (its own modules)."""
        self.open("query")
        got = self.d.execute_async_script("""
          const done = arguments[arguments.length - 1];
          const base = document.querySelector('script[type=module]').src.replace(/app\\.js$/, '');
          Promise.all(['prom', 'write', 'chart', 'results', 'browse'].map((m) => import(base + m + '.js')))
            .then(([prom, write, chart, results, browse]) => {
              const text = '# HELP x\\nreq_bucket{route="/write",le="0.1"} 0\\nreq_bucket{route="/write",le="0.5"} 50\\n'
                + 'req_bucket{route="/write",le="1"} 100\\nreq_bucket{route="/write",le="+Inf"} 100\\n'
                + 'esc{a="x\\\\"y",b="1"} 2.5\\nplain 7 1700000000000\\n';
              const samples = prom.parse(text);
              done({
                samples: samples.length,
                escaped: samples.find((s) => s.name === 'esc').labels.a,
                plain: prom.sum(samples, 'plain'),
                p95: prom.quantile(0.95, [], prom.buckets(samples, 'req', {route: '/write'})),
                p50: prom.quantile(0.5, [[0.1, 0], [0.5, 10], [1, 10], [Infinity, 10]], prom.buckets(samples, 'req')),
                none: prom.quantile(0.95, prom.buckets(samples, 'req'), prom.buckets(samples, 'req')),
                explain: write.explain("partial write: unable to parse 'a b': invalid field format\\nfield type conflict: x dropped=1"),
                lines: write.dataLines('m v=1\\n\\n# c\\n  m v=2\\r\\n').map((l) => l.number),
                engineTime: chart.parseTime('2026-11-29 06:29:04.123456789'),
                rfcTime: chart.parseTime('2026-11-29T06:29:04Z'),
                dayTime: chart.parseTime('2026-11-29'),
                notTime: chart.parseTime('web1'),
                influxAt: results.errorOffset('found X, expected FROM at line 2, char 3', 'SHOW DATABASES\\nSELEC x'),
                engineAt: results.errorOffset('Syntax error: failed at position 7 (1)', 'SELEC 1'),
                noAt: results.errorOffset('database not found: x', 'SHOW x'),
                measurement: browse.measurementOf('a\\\\,b\\\\ c,host=x'),
                ident: browse.ident('we"ird'),
                literal: browse.literal("it's"),
              });
            }, (e) => done({error: String(e)}));""")
        self.assertNotIn("error", got)
        self.assertEqual(got["samples"], 6)
        self.assertEqual(got["escaped"], 'x"y')
        self.assertEqual(got["plain"], 7)
        self.assertAlmostEqual(got["p95"], 0.95)
        # Between the scrapes: 40 in (0.1, 0.5], 50 in (0.5, 1]; the 45th of 90 lies 5/50 into the second.
        self.assertAlmostEqual(got["p50"], 0.5 + 0.5 * (5 / 50))
        self.assertIsNone(got["none"])
        self.assertEqual(got["explain"], {"partial": True, "dropped": 1, "parts": [
            {"line": "a b", "reason": "invalid field format"}, {"line": None, "reason": "field type conflict: x"}]})
        self.assertEqual(got["lines"], [1, 4])
        self.assertAlmostEqual(got["engineTime"], 1795933744.123456789, places=5)
        self.assertEqual(got["rfcTime"], 1795933744)
        self.assertEqual(got["dayTime"], 1795910400)
        self.assertIsNone(got["notTime"])
        self.assertEqual((got["influxAt"], got["engineAt"], got["noAt"]), (17, 6, None))
        self.assertEqual(got["measurement"], "a,b c")
        self.assertEqual((got["ident"], got["literal"]), ('"we\\"ird"', "'it\\'s'"))


class ConsoleWithAuth(ConsoleCase):
    """Auth on: a sign-in, credentials in memory only, each user's databases."""

    db = "alpha"

    def test_sign_in_is_asked_and_a_wrong_password_refused(self):
        self.sign_in(os.environ["CHINGEST_USER"], "wrong")
        err = self.until(lambda: (lambda e: e if e.is_displayed() else None)(self.el("#login-error")), "the refusal")
        self.assertIn("refused", err.text)
        self.assertFalse(self.el("#view-query").is_displayed())
        self.el("#login-password").clear()
        self.shot("login")

    def test_a_user_sees_only_its_own_databases(self):
        user, password = os.environ["CHINGEST_USER"], os.environ["CHINGEST_PASSWORD"]
        self.sign_in(user, password)
        self.until(lambda: self.el("#view-query").is_displayed(), "the Query view")
        self.assertEqual(self.el("#who").text, f"signed in as {user}")
        self.until(lambda: self.db_names(), "the databases")
        # SHOW DATABASES lists those it may read or write (as InfluxDB 1.x): gamma it may only write.
        self.assertEqual(self.db_names(), ["alpha", "gamma"])
        self.assertEqual([o.get_attribute("value") for o in self.els("#w-dbs option")], ["alpha", "gamma"])
        self.open("browse")  # a reload forgets the credentials: sign in again
        self.until(lambda: self.el("#login").is_displayed(), "the sign-in form after a reload")
        self.sign_in(user, password)
        self.until(lambda: self.el("#who").text, "the sign-in")
        self.el("#tabs a[data-view=browse]").click()
        self.until(lambda: self.els("#b-tree details[data-kind=db]"), "the tree")
        self.assertEqual([e.get_attribute("data-name") for e in self.els("#b-tree details[data-kind=db]")], ["alpha", "gamma"])
        self.el("#tabs a[data-view=query]").click()
        self.run_query("influxql", "SELECT count(usage) FROM cpu")
        self.assertEqual(self.tables()[0]["rows"][0][1], "60")
        self.run_query("influxql", "SHOW MEASUREMENTS ON beta")
        self.assertIn("requires READ on beta", " ".join(self.errors()))
        self.run_query("sql", "SELECT count() FROM beta.cpu")
        self.assertIn("HTTP 403", " ".join(self.errors()))
        # Nothing of the credentials outside the page's memory.
        kept = self.d.execute_script("""return {local: localStorage.length, session: sessionStorage.length,
          cookie: document.cookie, urls: performance.getEntriesByType('resource').map((e) => e.name)};""")
        self.assertEqual((kept["local"], kept["session"], kept["cookie"]), (0, 0, ""))
        self.assertFalse([u for u in kept["urls"] if password in u or re.search(r"[?&][up]=", u)], kept["urls"])
        self.el("#logout").click()
        self.until(lambda: self.el("#login").is_displayed(), "the sign-in form after signing out")

    def admin_query(self, db, q):
        """`q` on `db` as the admin, through the HTTP API (not the page): the JSON answer."""
        auth = base64.b64encode(f"{os.environ['CHINGEST_ADMIN']}:{os.environ['CHINGEST_ADMIN_PASSWORD']}".encode()).decode()
        req = urllib.request.Request(os.environ["CHINGEST_URL"] + "/query", method="POST",
                                     data=urllib.parse.urlencode({"db": db, "q": q}).encode(),
                                     headers={"Authorization": "Basic " + auth})
        return json.load(urllib.request.urlopen(req))

    def test_a_user_writes_to_a_database_made_after_the_page_loaded(self):
        user, password = os.environ["CHINGEST_USER"], os.environ["CHINGEST_PASSWORD"]
        self.sign_in(user, password)
        self.until(lambda: self.db_names(), "the databases")
        self.admin_query("", "CREATE DATABASE delta")
        self.el("#tabs a[data-view=write]").click()
        self.assertNotIn("delta", [o.get_attribute("value") for o in self.els("#w-dbs option")])
        self.el("#w-db").clear()
        self.el("#w-db").send_keys("delta")
        self.el("#w-text").send_keys(f"typed,host=x v=1 {int(time.time())}")
        Select(self.el("#w-precision")).select_by_value("s")
        self.el("#w-send").click()
        self.until(lambda: self.els("#w-result .note"), "the answer")
        self.assertIn("Written.", self.el("#w-result .note").text)
        body = self.admin_query("delta", "SELECT count(v) FROM typed")
        self.assertEqual(body["results"][0]["series"][0]["values"][0][1], 1, body)

    def test_an_admin_sees_every_database(self):
        self.sign_in(os.environ["CHINGEST_ADMIN"], os.environ["CHINGEST_ADMIN_PASSWORD"])
        self.until(lambda: self.db_names(), "the databases")
        every = self.admin_query("", "SHOW DATABASES")["results"][0]["series"][0]["values"]
        self.assertEqual(self.db_names(), sorted(v[0] for v in every))
        self.assertTrue({"alpha", "beta", "gamma"} <= set(self.db_names()), self.db_names())


if __name__ == "__main__":
    unittest.main()
