"""Real InfluxDB clients against a running chingest.

Environment: CHINGEST_URL (http://127.0.0.1:PORT), CHINGEST_USER, CHINGEST_PASSWORD,
CHINGEST_TOKEN. Run by server/tests/http/python.rs with the venv from
`scripts/setup.sh --test-deps`. Every write is read back through /api/v1/sql and
compared exactly; V1Query reads through the client's own InfluxQL `query()`.
"""
import json
import os
import time
import unittest
import urllib.parse
import urllib.request
import urllib.error
import base64
from datetime import datetime, timezone

from influxdb import InfluxDBClient
from influxdb_client import InfluxDBClient as V2Client, Point, WritePrecision
from influxdb_client.client.write_api import SYNCHRONOUS, WriteOptions

URL = os.environ["CHINGEST_URL"]
USER = os.environ["CHINGEST_USER"]
PASSWORD = os.environ["CHINGEST_PASSWORD"]
TOKEN = os.environ["CHINGEST_TOKEN"]
HOST, PORT = urllib.parse.urlparse(URL).hostname, urllib.parse.urlparse(URL).port


def sql(query):
    req = urllib.request.Request(URL + "/api/v1/sql?format=jsoneachrow", data=query.encode(), method="POST")
    cred = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    req.add_header("Authorization", "Basic " + cred)
    with urllib.request.urlopen(req, timeout=30) as r:
        return [json.loads(line) for line in r.read().decode().splitlines() if line]


def sql_until(query, n, timeout=20.0):
    deadline = time.time() + timeout
    while True:
        try:
            rows = sql(query)
        except urllib.error.HTTPError as e:
            # The table appears with the first flush.
            if e.code == 400 and time.time() < deadline:
                time.sleep(0.05)
                continue
            raise
        if len(rows) == n or time.time() > deadline:
            return rows
        time.sleep(0.05)


class V1Client(unittest.TestCase):
    def test_write_points_every_type_and_precision(self):
        c = InfluxDBClient(host=HOST, port=PORT, username=USER, password=PASSWORD, database="pyv1")
        c.create_database("pyv1")
        self.assertIn({"name": "pyv1"}, c.get_list_database())
        points = [
            {"measurement": "cpu", "tags": {"host": "a", "region": "eu"},
             "time": 1700000000123, "fields": {"f": 0.1, "i": 42, "s": "quote \" and \\ slash", "b": True}},
            {"measurement": "cpu", "tags": {"host": "b"},
             "time": 1700000000456, "fields": {"f": -1e-300, "i": -9223372036854775807, "s": "", "b": False}},
        ]
        self.assertTrue(c.write_points(points, time_precision="ms"))
        rows = sql_until("SELECT toString(toUnixTimestamp64Nano(time)) AS t, host, region, f, toString(i) AS i, s, b "
                         "FROM pyv1.cpu ORDER BY t", 2)
        self.assertEqual(rows, [
            {"t": "1700000000123000000", "host": "a", "region": "eu", "f": 0.1, "i": "42",
             "s": "quote \" and \\ slash", "b": True},
            {"t": "1700000000456000000", "host": "b", "region": "", "f": -1e-300,
             "i": "-9223372036854775807", "s": "", "b": False},
        ])
        # Seconds precision and a batch through write_points(batch_size=...).
        many = [{"measurement": "mem", "tags": {"k": str(i % 3)}, "time": 1700000000 + i,
                 "fields": {"v": i}} for i in range(100)]
        self.assertTrue(c.write_points(many, time_precision="s", batch_size=30))
        sql_until("SELECT 1 FROM pyv1.mem LIMIT 1", 1)
        rows = sql("SELECT toString(count()) AS n, toString(sum(v)) AS s, toString(min(toUnixTimestamp64Nano(time))) AS t0 FROM pyv1.mem")
        deadline = time.time() + 20
        while rows[0]["n"] != "100" and time.time() < deadline:
            time.sleep(0.05)
            rows = sql("SELECT toString(count()) AS n, toString(sum(v)) AS s, toString(min(toUnixTimestamp64Nano(time))) AS t0 FROM pyv1.mem")
        self.assertEqual(rows[0], {"n": "100", "s": str(sum(range(100))), "t0": "1700000000000000000"})
        # Errors surface as client exceptions with the server's message.
        with self.assertRaises(Exception) as ctx:
            c.write_points([{"measurement": "cpu", "time": 1, "fields": {"f": "not a float"}}])
        self.assertIn("field type conflict", str(ctx.exception))
        tags = c.query("SHOW TAG KEYS FROM cpu")
        self.assertEqual(sorted(p["tagKey"] for p in tags.get_points()), ["host", "region"])


class V1Query(unittest.TestCase):
    """InfluxDBClient.query() and ResultSet.get_points(): InfluxQL on /query."""

    T0 = 1700000000000  # 2023-11-14T22:13:20Z, on a 10 s boundary

    @classmethod
    def setUpClass(cls):
        cls.c = InfluxDBClient(host=HOST, port=PORT, username=USER, password=PASSWORD, database="pyq")
        cls.c.create_database("pyq")
        t0 = cls.T0

        def p(host, region, dt, f, i, s, b):
            return {"measurement": "cpu_q", "tags": {"host": host, "region": region}, "time": t0 + dt,
                    "fields": {"f": f, "i": i, "s": s, "b": b}}
        points = [
            p("a", "eu", 0, 1.0, 1, "x", True),
            p("b", "us", 1000, 10.0, 10, "", False),
            p("a", "eu", 5250, 2.0, 2, "y", False),
            p("a", "eu", 10000, 4.0, 3, "z", True),
            p("b", "us", 12000, 20.0, 20, "q\"uote", True),
        ]
        assert cls.c.write_points(points, time_precision="ms")
        rows = sql_until("SELECT 1 FROM pyq.cpu_q", len(points))
        assert len(rows) == len(points), rows

    def test_raw_select_get_points(self):
        t0 = self.T0
        rs = self.c.query('SELECT * FROM "cpu_q"', epoch="ms")
        self.assertEqual(list(rs.keys()), [("cpu_q", None)])
        points = list(rs.get_points())
        self.assertEqual(points, [
            {"time": t0, "b": True, "f": 1.0, "host": "a", "i": 1, "region": "eu", "s": "x"},
            {"time": t0 + 1000, "b": False, "f": 10.0, "host": "b", "i": 10, "region": "us", "s": ""},
            {"time": t0 + 5250, "b": False, "f": 2.0, "host": "a", "i": 2, "region": "eu", "s": "y"},
            {"time": t0 + 10000, "b": True, "f": 4.0, "host": "a", "i": 3, "region": "eu", "s": "z"},
            {"time": t0 + 12000, "b": True, "f": 20.0, "host": "b", "i": 20, "region": "us", "s": "q\"uote"},
        ])
        # Integers stay integers (booleans are not integers).
        self.assertTrue(all(type(p["i"]) is int for p in points))
        # Without GROUP BY the client filters on the selected tag columns.
        self.assertEqual([p["time"] for p in rs.get_points(measurement="cpu_q", tags={"host": "b"})],
                         [t0 + 1000, t0 + 12000])
        # Without epoch: RFC3339 in UTC. (The client prints it as it came: "…25.25Z" from JSON,
        # "…25.250000Z" from msgpack, which it also asks for; the instant is what is compared.)
        rs = self.c.query('SELECT "f", "host" FROM "cpu_q" WHERE "host" = \'a\'')
        times = [p["time"] for p in rs.get_points()]
        self.assertTrue(all(t.endswith("Z") for t in times), times)
        self.assertEqual([datetime.fromisoformat(t[:-1] + "+00:00") for t in times], [
            datetime(2023, 11, 14, 22, 13, 20, tzinfo=timezone.utc),
            datetime(2023, 11, 14, 22, 13, 25, 250000, tzinfo=timezone.utc),
            datetime(2023, 11, 14, 22, 13, 30, tzinfo=timezone.utc),
        ])

    def test_aggregate_group_by_time_and_tag(self):
        t0 = self.T0
        rs = self.c.query(
            f'SELECT mean("f") AS "m", count("i") AS "n", max("i") FROM "cpu_q" '
            f'WHERE time >= {t0}ms AND time < {t0 + 20000}ms GROUP BY time(10s), "host" fill(none)', epoch="ms")
        self.assertEqual(list(rs.keys()), [("cpu_q", {"host": "a"}), ("cpu_q", {"host": "b"})])
        self.assertEqual(list(rs.get_points(tags={"host": "a"})), [
            {"time": t0, "m": 1.5, "n": 2, "max": 2},
            {"time": t0 + 10000, "m": 4.0, "n": 1, "max": 3},
        ])
        self.assertEqual(list(rs.get_points(measurement="cpu_q", tags={"host": "b"})), [
            {"time": t0, "m": 10.0, "n": 1, "max": 10},
            {"time": t0 + 10000, "m": 20.0, "n": 1, "max": 20},
        ])
        # fill(null): the empty interval is there, with nulls.
        rs = self.c.query(
            f'SELECT mean("f") FROM "cpu_q" WHERE "host" = \'a\' AND time >= {t0}ms AND time < {t0 + 30000}ms '
            'GROUP BY time(10s) fill(null)', epoch="ms")
        self.assertEqual(list(rs.get_points()), [
            {"time": t0, "mean": 1.5}, {"time": t0 + 10000, "mean": 4.0}, {"time": t0 + 20000, "mean": None},
        ])

    def test_bind_params(self):
        t0 = self.T0
        rs = self.c.query('SELECT "f", "s" FROM "cpu_q" WHERE "host" = $host AND "f" > $min',
                          bind_params={"host": "a", "min": 1.5}, epoch="ms")
        self.assertEqual(list(rs.get_points()), [
            {"time": t0 + 5250, "f": 2.0, "s": "y"},
            {"time": t0 + 10000, "f": 4.0, "s": "z"},
        ])

    def test_several_statements_and_errors(self):
        both = self.c.query('SELECT count("f") FROM "cpu_q"; SELECT max("i") FROM "cpu_q" WHERE "host" = \'b\'',
                            epoch="ms")
        self.assertEqual([list(r.get_points()) for r in both], [
            [{"time": 0, "count": 5}],
            [{"time": self.T0 + 12000, "max": 20}],
        ])
        from influxdb.exceptions import InfluxDBClientError
        with self.assertRaises(InfluxDBClientError) as ctx:
            self.c.query('SELECT nope("f") FROM "cpu_q"')
        self.assertIn("undefined function nope()", str(ctx.exception))
        with self.assertRaises(InfluxDBClientError) as ctx:
            self.c.query('SELECT * FROM "cpu_q"', database="pyq_missing")
        self.assertIn("database not found: pyq_missing", str(ctx.exception))

    def test_token_scheme_query(self):
        # The InfluxDB 1.x compatibility API of InfluxDB 2.x takes `Authorization: Token` on
        # /query; chingest does too. influxdb_client (1.49) has no InfluxQL query of its own:
        # its query_api() is Flux on /api/v2/query (its Query model says the type "Must be
        # flux"), so the v1-compatible query path for token users is this one.
        c = InfluxDBClient(host=HOST, port=PORT, database="pyq", headers={"Authorization": f"Token {TOKEN}"})
        rs = c.query('SELECT last("f") FROM "cpu_q" GROUP BY "host"', epoch="ms")
        self.assertEqual(list(rs.get_points(tags={"host": "a"})), [{"time": self.T0 + 10000, "last": 4.0}])
        self.assertEqual(list(rs.get_points(tags={"host": "b"})), [{"time": self.T0 + 12000, "last": 20.0}])
        bad = InfluxDBClient(host=HOST, port=PORT, database="pyq", headers={"Authorization": "Token wrong"})
        from influxdb.exceptions import InfluxDBClientError
        with self.assertRaises(InfluxDBClientError) as ctx:
            bad.query('SELECT "f" FROM "cpu_q"')
        self.assertEqual(ctx.exception.code, 401)


class V2ClientTest(unittest.TestCase):
    def setUp(self):
        InfluxDBClient(host=HOST, port=PORT, username=USER, password=PASSWORD).create_database("pyv2")

    def test_synchronous_write(self):
        with V2Client(url=URL, token=TOKEN, org="my-org") as client:
            api = client.write_api(write_options=SYNCHRONOUS)
            p = (Point("net").tag("iface", "eth0").field("rx", 1.5).field("pkts", 7)
                 .field("up", True).field("name", "lan").time(1700000000000000001, WritePrecision.NS))
            api.write(bucket="pyv2", record=p)
            api.write(bucket="pyv2", record="net,iface=eth1 rx=2.25,pkts=8i,up=false,name=\"wan\" 1700000000000002",
                      write_precision=WritePrecision.US)
        rows = sql_until("SELECT toString(toUnixTimestamp64Nano(time)) AS t, iface, rx, toString(pkts) AS pkts, up, name "
                         "FROM pyv2.net ORDER BY t", 2)
        self.assertEqual(rows, [
            {"t": "1700000000000000001", "iface": "eth0", "rx": 1.5, "pkts": "7", "up": True, "name": "lan"},
            {"t": "1700000000000002000", "iface": "eth1", "rx": 2.25, "pkts": "8", "up": False, "name": "wan"},
        ])

    def test_batching_write(self):
        errors = []
        with V2Client(url=URL, token=TOKEN, org="my-org") as client:
            opts = WriteOptions(batch_size=50, flush_interval=200, max_retries=0)
            with client.write_api(write_options=opts, error_callback=lambda conf, data, e: errors.append(e)) as api:
                for i in range(500):
                    api.write(bucket="pyv2", record=Point("batch").tag("w", str(i % 5)).field("v", float(i))
                              .time(1700000000 + i, WritePrecision.S))
        self.assertEqual(errors, [])
        sql_until("SELECT 1 FROM pyv2.batch LIMIT 1", 1)
        deadline = time.time() + 20
        while True:
            rows = sql("SELECT toString(count()) AS n, sum(v) AS s FROM pyv2.batch")
            if rows[0]["n"] == "500" or time.time() > deadline:
                break
            time.sleep(0.05)
        self.assertEqual(rows[0], {"n": "500", "s": float(sum(range(500)))})

    def test_bad_token_is_unauthorized(self):
        from influxdb_client.rest import ApiException
        with V2Client(url=URL, token="wrong", org="my-org") as client:
            with self.assertRaises(ApiException) as ctx:
                client.write_api(write_options=SYNCHRONOUS).write(bucket="pyv2", record="x v=1")
        self.assertEqual(ctx.exception.status, 401)


if __name__ == "__main__":
    unittest.main(verbosity=2)
