"""workload.cancel (issue 43): a share of requests that the client abandons, after some tokens
or after a delay, as a browser whose user closed the tab.  Against chatload-sim at 16 streams:
the share cancelled is the one asked for (apportioned exactly, so within a request per agent),
each cancelled request received exactly its tokens, none is counted as an error, completed or
cut, and the simulator saw each one go (its truth log's client_gone and its
vllm:request_success_total{finished_reason="abort"}, which the server view puts beside
chatload's count, in the warning and in report.md's server table).  A delay, fixed or drawn
from a range: each cancelled request ended at its time, not before."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402
from http2_test import Nghttpx  # noqa: E402

REQUESTS = 400
STREAMS = 16


def read_records(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


class Cancel(tl.FleetCase):
    tag = "cancel"

    def run_cancel(self, name, cancel, sim_args, requests=REQUESTS, h2=False):
        sim = self.start_sim(*sim_args)
        metrics = sim.url[:-len("/v1")] + "/metrics"
        target = {"url": sim.url, "server_metrics": {"url": metrics, "interval": "300ms"}}
        if h2:
            # nghttpx in front: the client aborts each cancelled h2c transfer and the proxy
            # closes its HTTP/1.1 backend connection for it
            px = Nghttpx(self, "px-" + name, sim.port)
            target.update({"url": px.url, "http2": True})
        doc = tl.scenario(target,
                          [{"name": "c16", "concurrency": STREAMS, "requests": requests}],
                          {"local": 1, "workers": 2}, name=name,
                          output={"formats": ["json", "md"], "requests": True})
        doc["workload"].update({"max_tokens": 40, "cancel": cancel})
        out = self.scope.path("out-" + name)
        p = self.start_run(self.write_scenario(name + ".yaml", doc), out)
        self.assertExit(p, 0, 180)
        res = self.results(out)
        st = res["stages"][0]
        # the run says which figures leave them out, with the server's count beside
        n = st["requests"]["cancelled"]
        ab = st["server"]["aborted_requests"]
        self.assertTrue(any("%d of %d requests were cancelled by the client" % (n, requests)
                            in w and "the server counted %d aborted" % ab in w
                            for w in res["warnings"]), res["warnings"])
        with open(os.path.join(out, "report.md")) as f:
            self.assertIn("| %d / %d |" % (ab, n), f.read())
        recs = read_records(os.path.join(out, "requests.jsonl"))
        sim.stop()
        chat = [r for r in sim.truth() if "arrival_us" in r]
        return st, recs, chat

    def check_counts(self, st, recs, chat, share, server_lag=0):
        req = st["requests"]
        self.assertEqual(req["started"], REQUESTS, req)
        # apportioned exactly: floor or ceil of the share over the requests, per agent
        self.assertLessEqual(abs(req["cancelled"] - share * REQUESTS), 1, req)
        self.assertEqual(req["errors_total"], 0, req)
        self.assertEqual(req["cut"], 0, req)
        self.assertEqual(req["started"], req["completed"] + req["cancelled"], req)
        # goodput counts completed requests only
        self.assertLessEqual(req["good"], req["completed"], req)
        cancelled = [r for r in recs if r["status"] == "cancelled"]
        self.assertEqual(len(cancelled), req["cancelled"])
        # the simulator saw each of them go, and no other
        gone = [t for t in chat if t["client_gone"]]
        self.assertEqual(len(gone), req["cancelled"],
                         sorted({str(t["status"]) for t in chat}))
        self.assertEqual(sorted(t["x_request_id"] for t in gone),
                         sorted(r["id"] for r in cancelled))
        self.assertTrue(all(t["status"] == "client_gone" for t in gone))
        # the server's count of aborted requests sits beside chatload's: equal when the
        # client's close reaches the server at once; through a proxy the last ones may reach
        # it after the stage's end mark was scraped (server_lag), never more than it had
        srv = st["server"]
        self.assertEqual(srv["source"], "vllm", srv)
        self.assertLessEqual(srv["aborted_requests"], req["cancelled"], srv)
        self.assertGreaterEqual(srv["aborted_requests"], req["cancelled"] - server_lag, srv)
        return cancelled, {t["x_request_id"]: t for t in gone}

    def test_after_tokens(self):
        """share 25 %, after_tokens 5: every cancelled request received exactly 5 tokens (the
        simulator may have written more into the socket before it saw the client go)."""
        st, recs, chat = self.run_cancel(
            "tokens", {"share": "25%", "after_tokens": 5},
            ["--ttft", "5ms", "--itl", "4ms", "--output-tokens", "40"])
        cancelled, gone = self.check_counts(st, recs, chat, 0.25)
        for r in cancelled:
            self.assertEqual(r["output_tokens"], 5, r)
            self.assertIsNotNone(r["ttft_ms"], r)
            t = gone[r["id"]]
            self.assertGreaterEqual(t["output_tokens"], 5, t)
            self.assertLess(t["output_tokens"], 40, t)
        for r in recs:
            if r["status"] == "completed":
                self.assertEqual(r["output_tokens"], 40, r)
        self.assertEqual(st["requests"]["completed"], REQUESTS - len(cancelled))

    def test_after_delay(self):
        """share 10 %, after 60ms against answers of about 200 ms: each cancelled request was
        closed 60 ms after it was sent (never before), having received what came until then."""
        st, recs, chat = self.run_cancel(
            "delay", {"share": "10%", "after": "60ms"},
            ["--ttft", "10ms", "--itl", "5ms", "--output-tokens", "40"])
        cancelled, gone = self.check_counts(st, recs, chat, 0.10)
        for r in cancelled:
            # closed at its time, never before (the record's e2e_ms: handed to libcurl ->
            # its end); the bound above allows a loaded machine's late wakeup
            self.assertGreaterEqual(r["e2e_ms"], 60.0, r)
            self.assertLess(r["e2e_ms"], 150.0, r)
            # it received what came until then: some tokens, far fewer than 40
            self.assertGreater(r["output_tokens"], 0, r)
            self.assertLess(r["output_tokens"], 40, r)
            t = gone[r["id"]]
            self.assertLess(t["output_tokens"], 40, t)
        for r in recs:
            if r["status"] == "completed":
                self.assertGreater(r["e2e_ms"], 60.0, r)
    def test_after_uniform_delay(self):
        """share 10 %, after uniform:40ms-120ms: each cancelled request ended inside its range
        (never before 40 ms), and the delays are spread over it, not one value."""
        st, recs, chat = self.run_cancel(
            "uniform", {"share": "10%", "after": "uniform:40ms-120ms"},
            ["--ttft", "10ms", "--itl", "5ms", "--output-tokens", "40"])
        cancelled, gone = self.check_counts(st, recs, chat, 0.10)
        ends = sorted(r["e2e_ms"] for r in cancelled)
        self.assertGreaterEqual(ends[0], 40.0, ends)
        self.assertLess(ends[-1], 200.0, ends)
        # 40 draws from 80 ms of range: the earliest and latest tenths both hold some
        self.assertLess(ends[0], 60.0, ends)
        self.assertGreater(ends[-1], 100.0, ends)

    def test_after_tokens_http2(self):
        """The same over HTTP/2 (h2c through nghttpx): the client aborts each cancelled
        transfer and the proxy passes the client's going to the simulator as a closed backend
        connection.  (Whether libcurl reset the stream or closed the connection is not told
        apart here: with this proxy every request opens a connection of its own.)"""
        st, recs, chat = self.run_cancel(
            "h2", {"share": "25%", "after_tokens": 5},
            ["--ttft", "5ms", "--itl", "4ms", "--output-tokens", "40"], h2=True)
        self.assertEqual(st["http"]["protocol"], "HTTP/2", st["http"])
        cancelled, gone = self.check_counts(st, recs, chat, 0.25, server_lag=3)
        for r in cancelled:
            self.assertEqual(r["output_tokens"], 5, r)
        for r in recs:
            if r["status"] == "completed":
                self.assertEqual(r["output_tokens"], 40, r)


if __name__ == "__main__":
    tl.main()
