#!/usr/bin/env python3
"""The live page (chatload run --web) read hard while the run writes its results: four
clients fetch the page back to back through two stages of 100 ms report intervals, one of
them finishing (its stage added to the results, results.json rewritten) while they read.
Every answer is a whole page (it parses as XML: no torn or mixed render), the pages move
with the run (the running stage's intervals grow, then the first stage shows finished), and
the run ends as it would unwatched.  Built with CHATLOAD_SANITIZE=thread, the same test is
the witness that the page crosses from the run's thread to the listener's as bytes only: a
ThreadSanitizer report in any program fails it (chatload_testlib's tearDown)."""
import os
import re
import sys
import threading
import time
import unittest
import urllib.request
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

READERS = 4


class LivePageTest(tl.FleetCase):
    tag = "live-page"

    def test_page_read_hard_during_a_run(self):
        doc = {
            "name": "live-hammer",
            "target": {"model": "chatload-sim",
                       "simulator": {"ttft": "5ms", "itl": "1ms", "output_tokens": 20}},
            "agents": {"local": 1, "report_interval": "100ms"},
            "readiness": {"enabled": False},
            "workload": {"prompts": ["Say something."], "max_tokens": 20},
            "stages": [{"name": "first", "rate": "50/s", "duration": "%ds" % (4 * tl.SLOW)},
                       {"name": "second", "rate": "50/s", "duration": "%ds" % (4 * tl.SLOW)}],
            "slo": {"ttft_p99": "5s"},
            # Four readers on a shared machine may starve the agent now and then: said, and
            # no concern of this test.
            "client_bound": "warn",
        }
        path = self.write_scenario("live.yaml", doc)
        out = self.scope.path("out")
        run = self.start_run(path, out, "--web", "127.0.0.1:0")
        _, _, m = run.wait_line(r"live report at (http://\S+/)", 30 * tl.SLOW)
        url = m.group(1)

        stop = threading.Event()
        lock = threading.Lock()
        pages = []      # (time the fetch began, text) of every page read
        failures = []   # (time the fetch failed, what)

        def reader():
            while not stop.is_set():
                began = time.monotonic()
                try:
                    with urllib.request.urlopen(url, timeout=10) as r:
                        status = r.status
                        text = r.read().decode("utf-8")
                except OSError as e:
                    with lock:
                        failures.append((time.monotonic(), repr(e)))
                    time.sleep(0.05)
                    continue
                with lock:
                    if status != 200:
                        failures.append((time.monotonic(), "status %d" % status))
                    pages.append((began, text))

        threads = [threading.Thread(target=reader, daemon=True) for _ in range(READERS)]
        for t in threads:
            t.start()
        try:
            self.assertExit(run, 0, 90 * tl.SLOW)
            ended = time.monotonic()
        finally:
            stop.set()
            for t in threads:
                t.join(15)
        # The listener closes as the run ends, so fetches fail then.  Before, none may: a
        # failure is only the closed listener when it came in the run's last seconds and no
        # fetch begun after it got a page.
        if failures:
            first = min(t for t, _ in failures)
            self.assertGreater(first, ended - 5 * tl.SLOW,
                               "a fetch failed during the run: %s" % failures[0][1])
            late = [t for t, _ in pages if t > first]
            self.assertEqual(late, [], "pages served after a failed fetch: %s" % (
                failures[0][1]))

        # Read back to back, the page was fetched far more often than it is rendered (once
        # a second): most answers are copies of one render, none of them torn.
        self.assertGreater(len(pages), 100, "pages read during the run")
        starting = "the run is starting"
        rendered = [t for _, t in pages if starting not in t]
        self.assertGreater(len(rendered), 50)
        distinct = {}
        for text in rendered:
            distinct.setdefault(text, 0)
            distinct[text] += 1
        for text in distinct:
            self.assertTrue(text.startswith("<!DOCTYPE html>"), text[:200])
            self.assertTrue(text.rstrip().endswith("</html>"), text[-200:])
            ET.fromstring(text[text.index("<html"):])  # whole: it parses as XML
        # The pages moved with the run: several renders, a running stage seen, and after it
        # a page where the first stage is finished and the second runs.
        print("live page: %d fetches, %d distinct renders, %d failed at the end" % (
            len(pages), len(distinct), len(failures)))
        self.assertGreaterEqual(len(distinct), 4, "distinct renders read")
        running = re.compile(r"<td>running \(interval at \d+ s\)</td>")
        self.assertTrue(any(running.search(t) for t in distinct), "a running stage's row")
        both = [t for t in distinct if ">first<" in t and ">second<" in t and running.search(t)]
        self.assertTrue(both, "a page with the first stage done and the second running")
        res = self.results(out)
        self.assertEqual([s["name"] for s in res["stages"]], ["first", "second"])
        self.assertTrue(res["complete"])


if __name__ == "__main__":
    tl.main()
