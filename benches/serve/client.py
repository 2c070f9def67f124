"""The bench client of `serve` (benches/serve/*.sh): adds sent one at a time, paced or from
several clients at once, over kept-alive loopback connections, and latency percentiles."""
import http.client
import json
import threading
import time


def add(conn, id, text):
    """POST /add of one text; its answer."""
    body = json.dumps({"id": id, "text": text or ""})
    conn.request("POST", "/add", body, {"Content-Type": "application/json"})
    return json.loads(conn.getresponse().read())


def paced(port, items, rate):
    """Adds (id, text) `items` in order from one client, at `rate` a second at most: the answers,
    each add's latency in ms (HTTP and the journal's sync included), and the wall seconds."""
    conn = http.client.HTTPConnection("127.0.0.1", int(port))
    answers, lat, start = [], [], time.perf_counter()
    for i, (id, text) in enumerate(items):
        due = start + i / rate
        now = time.perf_counter()
        if due > now:
            time.sleep(due - now)
        t0 = time.perf_counter()
        answers.append(add(conn, id, text))
        lat.append((time.perf_counter() - t0) * 1e3)
    return answers, lat, time.perf_counter() - start


def unpaced(port, items, clients):
    """Adds `items` from `clients` clients at once, unpaced: adds a second."""
    def send(part):
        conn = http.client.HTTPConnection("127.0.0.1", int(port))
        for id, text in part:
            add(conn, id, text)
    start = time.perf_counter()
    threads = [threading.Thread(target=send, args=(items[k::clients],)) for k in range(clients)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    return len(items) / (time.perf_counter() - start)


def agreement(answers, manifest):
    """How many `answers` (to adds with the manifest's ids) the nightly run's manifest agrees
    with: (keep/drop, duplicate_of)."""
    import pyarrow.parquet as pq
    m = {x["id"]: x for x in pq.read_table(manifest, columns=["id", "keep", "duplicate_of"]).to_pylist()}
    keep = sum(m[a["id"]]["keep"] == (not a["duplicate"]) for a in answers)
    of = sum((m[a["id"]]["duplicate_of"] or None) == a["duplicate_of"] for a in answers)
    return keep, of


def percentiles(lat):
    """'p50 X, p90 Y, p99 Z, max W' of latencies in ms."""
    lat = sorted(lat)
    at = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
    return f"p50 {at(0.5):.2f}, p90 {at(0.9):.2f}, p99 {at(0.99):.2f}, max {lat[-1]:.2f}"
