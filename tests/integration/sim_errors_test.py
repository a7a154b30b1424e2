"""chatload-sim answers bad requests with 4xx and OpenAI-style error bodies, keeps serving
everyone else, and enforces --api-key."""

import json
import os
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simclient as sc  # noqa: E402

import chatload_testlib as tl

SIM = None
MSGS = [{"role": "user", "content": "hi"}]


def setUpModule():
    global SIM
    SIM = sc.Sim("--ttft", "2ms", "--itl", "1ms", "--max-body", "64KiB")


def tearDownModule():
    SIM.close()


def post(body, path="/v1/chat/completions", **kw):
    return sc.request(SIM.port, "POST", path, body, **kw)


class BadRequests(unittest.TestCase):
    def assertError(self, r, status, code=None):
        self.assertEqual(r.status, status, r.body)
        err = r.json()["error"]
        # a message a person can read and an OpenAI-style type ("invalid_request_error"),
        # not merely strings (which "" is)
        self.assertRegex(err["message"], r"\w+ \w+", err)
        self.assertRegex(err["type"], r"^[a-z]+(_[a-z]+)*$", err)
        self.assertIn("code", err)
        if code:
            self.assertEqual(err["code"], code)

    def test_bad_json(self):
        self.assertError(post(b'{"messages": [}'), 400, "invalid_json")
        self.assertError(post(b''), 400, "invalid_json")
        self.assertError(post(b'[1, 2]'), 400)

    def test_missing_or_bad_messages(self):
        self.assertError(post({"model": "chatload-sim"}), 400, "missing_required_parameter")
        self.assertError(post({"messages": "hello"}), 400, "invalid_type")
        self.assertError(post({"messages": []}), 400, "invalid_type")
        self.assertError(post({"messages": [42]}), 400, "invalid_type")

    def test_bad_fields(self):
        self.assertError(post({"messages": MSGS, "stream": "yes"}), 400, "invalid_type")
        self.assertError(post({"messages": MSGS, "max_tokens": 0}), 400, "invalid_value")
        self.assertError(post({"messages": MSGS, "max_completion_tokens": "9"}), 400)
        self.assertError(post({"messages": MSGS, "stream_options": []}), 400)
        self.assertError(post({"messages": MSGS, "stream": True,
                               "stream_options": {"include_usage": 1}}), 400)
        self.assertError(post({"messages": MSGS, "model": 7}), 400)

    def test_huge_body_413_and_connection_closed(self):
        big = json.dumps({"messages": [{"role": "user", "content": "x" * 70000}]})
        with sc.Conn(SIM.port) as c:
            r = c.request("POST", "/v1/chat/completions", big)
            self.assertError(r, 413, "body_too_large")
            self.assertEqual(r.headers.get("connection"), "close")
            self.assertEqual(c._line(), None)  # the server closed its side
        # declared too large: answered from the headers, without reading the body
        with sc.Conn(SIM.port) as c:
            c.send_raw(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                       b"Content-Length: 99999999\r\n\r\n")
            self.assertError(c.read_response(), 413)

    def test_unknown_path_and_wrong_method(self):
        self.assertError(sc.request(SIM.port, "GET", "/v1/nothing"), 404, "not_found")
        self.assertError(sc.request(SIM.port, "GET", "/"), 404)
        r = sc.request(SIM.port, "GET", "/v1/chat/completions")
        self.assertError(r, 405, "method_not_allowed")
        self.assertEqual(r.headers.get("allow"), "POST")
        self.assertError(sc.request(SIM.port, "POST", "/v1/models", {}), 405)
        self.assertError(sc.request(SIM.port, "DELETE", "/health"), 405)

    def test_broken_http(self):
        for raw, status in ((b"GARBAGE\r\n\r\n", 400),
                            (b"GET / HTTP/2.0\r\n\r\n", 505),
                            (b"GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400),
                            (b"GET / HTTP/1.1\r\nX: " + b"a" * 20000 + b"\r\n\r\n", 431),
                            (b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 5\r\n"
                             b"Transfer-Encoding: chunked\r\n\r\n", 400)):
            with sc.Conn(SIM.port) as c:
                c.send_raw(raw)
                r = c.read_response()
                self.assertEqual(r.status, status, raw[:40])
                self.assertIn("error", r.json())

    def test_server_keeps_serving_after_bad_requests(self):
        with sc.Conn(SIM.port) as c:  # an error on a keep-alive connection keeps it open
            self.assertEqual(c.request("POST", "/v1/chat/completions", b"{bad").status, 400)
            r = c.request("POST", "/v1/chat/completions",
                          {"messages": MSGS, "stream": True, "max_tokens": 3})
            self.assertEqual((r.status, r.data()[-1]), (200, "[DONE]"))
        # a client that connects and vanishes mid-request does not hurt either
        s = socket.create_connection(("127.0.0.1", SIM.port))
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 100\r\n\r\n{")
        s.close()
        r = sc.chat(SIM.port, max_tokens=2)
        self.assertEqual(r.status, 200)

    def test_rejected_requests_are_logged(self):
        r = post({"messages": MSGS, "stream": 1}, headers={"X-Request-Id": "bad-1"})
        self.assertEqual(r.status, 400)
        for _ in range(50):  # the log is flushed every 100 ms
            recs = [x for x in SIM.truth() if x["x_request_id"] == "bad-1"]
            if recs:
                break
            time.sleep(0.02)
        self.assertEqual(len(recs), 1)
        self.assertEqual((recs[0]["status"], recs[0]["id"], recs[0]["seq"]), (400, None, 0))


class ApiKey(unittest.TestCase):
    def test_bearer_required_on_v1(self):
        with sc.Sim("--api-key", "s3cret", "--ttft", "1ms", "--itl", "1ms") as sim:
            r = sc.chat(sim.port, max_tokens=1)
            self.assertEqual(r.status, 401)
            self.assertEqual(r.json()["error"]["code"], "invalid_api_key")
            r = sc.chat(sim.port, max_tokens=1, headers={"Authorization": "Bearer wrong"})
            self.assertEqual(r.status, 401)
            r = sc.chat(sim.port, max_tokens=1, headers={"Authorization": "s3cret"})
            self.assertEqual(r.status, 401)
            r = sc.chat(sim.port, max_tokens=1, headers={"Authorization": "Bearer s3cret"})
            self.assertEqual(r.status, 200)
            self.assertEqual(sc.request(sim.port, "GET", "/v1/models").status, 401)
            self.assertEqual(sc.request(sim.port, "GET", "/v1/models",
                                        headers={"Authorization": "Bearer s3cret"}).status, 200)
            self.assertEqual(sc.request(sim.port, "GET", "/health").status, 200)
            statuses = sorted(r["http_status"] for r in sim.truth(4))
            self.assertEqual(statuses, [200, 401, 401, 401])


if __name__ == "__main__":
    tl.main()
