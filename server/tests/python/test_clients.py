"""Real InfluxDB clients against a running chingest.

Environment: CHINGEST_URL (http://127.0.0.1:PORT), CHINGEST_USER, CHINGEST_PASSWORD,
CHINGEST_TOKEN. Run by server/tests/http/python.rs with the venv from
`scripts/setup.sh --test-deps`. Every check reads the points back through
/api/v1/sql and compares values exactly.
"""
import json
import os
import time
import unittest
import urllib.parse
import urllib.request
import urllib.error
import base64

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
