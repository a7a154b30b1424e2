"""chatload-sim speaks the OpenAI streaming protocol: SSE framing, usage, reasoning,
tokens per chunk, continuous usage, the non-streamed shape, models, health, keep-alive."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simclient as sc  # noqa: E402

import chatload_testlib as tl

SIM = None


def setUpModule():
    global SIM
    SIM = sc.Sim("--ttft", "5ms", "--itl", "1ms", "--model", "chatload-sim,second-model")


def tearDownModule():
    SIM.close()


class Framing(unittest.TestCase):
    def test_sse_framing_role_chunk_and_done(self):
        r = sc.chat(SIM.port, max_tokens=4, headers={"X-Request-Id": "req-framing-1"})
        self.assertEqual(r.status, 200)
        self.assertTrue(r.headers["content-type"].startswith("text/event-stream"))
        self.assertEqual(r.headers.get("x-request-id"), "req-framing-1")
        self.assertTrue(r.complete, "terminating zero-length chunk missing")
        # every event is `data: ...` followed by a blank line, nothing else in the body
        text = r.body.decode()
        self.assertTrue(text.endswith("data: [DONE]\n\n"), text[-60:])
        for block in text.split("\n\n")[:-1]:
            self.assertTrue(block.startswith("data: "), block)
        data = r.data()
        self.assertEqual(data[-1], "[DONE]")
        self.assertEqual(data.count("[DONE]"), 1)
        chunks = r.chunks()
        first = chunks[0][1]
        self.assertEqual(first["object"], "chat.completion.chunk")
        self.assertEqual(first["choices"][0]["delta"], {"role": "assistant", "content": ""})
        ids = {c["id"] for _, c in chunks}
        self.assertEqual(len(ids), 1)
        self.assertTrue(ids.pop().startswith("chatcmpl-"))
        self.assertTrue(all(c["model"] == "chatload-sim" for _, c in chunks))
        toks = sc.token_chunks(r)
        self.assertEqual(len(toks), 4)
        self.assertEqual(toks[-1][2]["choices"][0]["finish_reason"], "length")
        self.assertTrue(all(t[2]["choices"][0]["finish_reason"] is None for t in toks[:-1]))
        # without include_usage there is no usage at all
        self.assertTrue(all("usage" not in c for _, c in chunks))

    def test_usage_chunk_shape(self):
        r = sc.chat(SIM.port, max_tokens=6, stream_options={"include_usage": True},
                    messages=[{"role": "user", "content": "x" * 10}])
        chunks = [c for _, c in r.chunks()]
        last = chunks[-1]
        self.assertEqual(last["choices"], [])
        self.assertEqual(last["usage"], {"prompt_tokens": 3, "completion_tokens": 6,
                                         "total_tokens": 9,
                                         "completion_tokens_details": {"reasoning_tokens": 0}})
        for c in chunks[:-1]:
            self.assertIn("usage", c)
            self.assertIsNone(c["usage"])

    def test_prompt_tokens_count_characters_of_all_messages(self):
        msgs = [{"role": "system", "content": "abcde"},  # 5
                {"role": "user", "content": [{"type": "text", "text": "héllo"}]},  # 5 chars
                {"role": "assistant", "content": None}]
        r = sc.chat(SIM.port, messages=msgs, max_tokens=1, stream_options={"include_usage": True})
        usage = r.chunks()[-1][1]["usage"]
        self.assertEqual(usage["prompt_tokens"], 3)  # ceil(10 / 4)

    def test_max_completion_tokens_wins_over_max_tokens(self):
        r = sc.chat(SIM.port, max_tokens=9, max_completion_tokens=3)
        self.assertEqual(len(sc.token_chunks(r)), 3)
        r = sc.chat(SIM.port, max_tokens=2)
        self.assertEqual(len(sc.token_chunks(r)), 2)

    def test_default_output_is_128_tokens_and_stops(self):
        r = sc.chat(SIM.port, stream_options={"include_usage": True})
        toks = sc.token_chunks(r)
        self.assertEqual(len(toks), 128)
        self.assertEqual(toks[-1][2]["choices"][0]["finish_reason"], "stop")
        self.assertEqual(r.chunks()[-1][1]["usage"]["completion_tokens"], 128)

    def test_second_model_and_unknown_model(self):
        r = sc.chat(SIM.port, max_tokens=1, model="second-model")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.chunks()[0][1]["model"], "second-model")
        r = sc.chat(SIM.port, max_tokens=1, model="nope")
        self.assertEqual(r.status, 404)
        err = r.json()["error"]
        self.assertEqual(err["code"], "model_not_found")
        self.assertIn("nope", err["message"])
        self.assertIn("type", err)

    def test_non_stream_shape(self):
        r = sc.chat(SIM.port, stream=False, max_tokens=5)
        self.assertEqual(r.status, 200)
        self.assertEqual(r.headers["content-type"], "application/json")
        obj = r.json()
        self.assertEqual(obj["object"], "chat.completion")
        self.assertTrue(obj["id"].startswith("chatcmpl-"))
        self.assertEqual(obj["model"], "chatload-sim")
        ch = obj["choices"][0]
        self.assertEqual(ch["message"]["role"], "assistant")
        self.assertEqual(len(ch["message"]["content"].split()), 5)
        self.assertEqual(ch["finish_reason"], "length")
        self.assertEqual(obj["usage"]["completion_tokens"], 5)
        self.assertEqual(obj["usage"]["total_tokens"], obj["usage"]["prompt_tokens"] + 5)

    def test_stream_text_equals_non_stream_text_pattern(self):
        r = sc.chat(SIM.port, max_tokens=7)
        text = "".join(t for _, t, _ in sc.token_chunks(r))
        self.assertEqual(len(text.split()), 7)
        self.assertTrue(text.startswith(" "))


class Endpoints(unittest.TestCase):
    def test_models_list(self):
        r = sc.request(SIM.port, "GET", "/v1/models")
        self.assertEqual(r.status, 200)
        obj = r.json()
        self.assertEqual(obj["object"], "list")
        self.assertEqual([m["id"] for m in obj["data"]], ["chatload-sim", "second-model"])
        self.assertTrue(all(m["object"] == "model" for m in obj["data"]))
        r = sc.request(SIM.port, "GET", "/v1/models/second-model")
        self.assertEqual(r.json()["id"], "second-model")
        self.assertEqual(sc.request(SIM.port, "GET", "/v1/models/zzz").status, 404)

    def test_health(self):
        r = sc.request(SIM.port, "GET", "/health")
        self.assertEqual((r.status, r.json()), (200, {"status": "ok"}))

    def test_keep_alive_serves_many_requests_on_one_connection(self):
        with sc.Conn(SIM.port) as c:
            for i in range(5):
                r = c.request("POST", "/v1/chat/completions",
                              {"messages": [{"role": "user", "content": "hi"}],
                               "stream": i % 2 == 0, "max_tokens": 2})
                self.assertEqual(r.status, 200)
                self.assertTrue(r.complete)
            self.assertEqual(c.request("GET", "/v1/models").status, 200)

    def test_pipelined_requests_are_answered_in_order(self):
        body = json.dumps({"messages": [{"role": "user", "content": "hi"}], "stream": True,
                           "max_tokens": 3}).encode()
        req = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
               % len(body)) + body
        with sc.Conn(SIM.port) as c:
            c.send_raw(req + req + b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            a = c.read_response()
            b = c.read_response()
            h = c.read_response("GET")
        self.assertEqual((a.status, b.status, h.status), (200, 200, 200))
        self.assertNotEqual(a.chunks()[0][1]["id"], b.chunks()[0][1]["id"])
        self.assertEqual(h.json(), {"status": "ok"})

    def test_chunked_request_body_and_expect_continue(self):
        body = json.dumps({"messages": [{"role": "user", "content": "hi"}],
                           "max_tokens": 2}).encode()
        half = len(body) // 2
        req = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked"
               b"\r\nExpect: 100-continue\r\n\r\n")
        with sc.Conn(SIM.port) as c:
            c.send_raw(req)
            line = c._line()
            self.assertEqual(line, b"HTTP/1.1 100 Continue")
            self.assertEqual(c._line(), b"")
            c.send_raw(b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (half, body[:half],
                                                             len(body) - half, body[half:]))
            r = c.read_response()
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json()["usage"]["completion_tokens"], 2)


class TokensPerChunk(unittest.TestCase):
    def test_k_tokens_per_chunk_last_carries_fewer(self):
        with sc.Sim("--ttft", "5ms", "--itl", "2ms", "--tokens-per-chunk", "3") as sim:
            r = sc.chat(sim.port, max_tokens=10, stream_options={"include_usage": True})
            toks = sc.token_chunks(r)
            self.assertEqual([len(t.split()) for _, t, _ in toks], [3, 3, 3, 1])
            self.assertEqual(r.chunks()[-1][1]["usage"]["completion_tokens"], 10)
            rec = sim.truth(1)[0]
            self.assertEqual(rec["chunks"], 4)
            self.assertEqual(rec["output_tokens"], 10)
            # chunk j leaves when its last token is due: ttft + 2 itl, then +3 itl ... +1 itl
            self.assertEqual(rec["scheduled_first_us"] - rec["arrival_us"], 5000 + 2 * 2000)
            self.assertEqual(rec["scheduled_last_us"] - rec["scheduled_first_us"], 7 * 2000)


class ContinuousUsage(unittest.TestCase):
    def test_every_chunk_carries_cumulative_usage(self):
        with sc.Sim("--ttft", "5ms", "--itl", "1ms", "--tokens-per-chunk", "2",
                    "--reasoning-tokens", "3") as sim:
            r = sc.chat(sim.port, max_tokens=7,
                        stream_options={"include_usage": True, "continuous_usage_stats": True})
            chunks = [c for _, c in r.chunks()]
            completions = [c["usage"]["completion_tokens"] for c in chunks]
            # role chunk 0, then 2, 4, 6, 7 tokens, then the final usage-only chunk
            self.assertEqual(completions, [0, 2, 4, 6, 7, 7])
            reasoning = [c["usage"]["completion_tokens_details"]["reasoning_tokens"]
                         for c in chunks]
            self.assertEqual(reasoning, [0, 2, 3, 3, 3, 3])
            self.assertEqual({c["usage"]["prompt_tokens"] for c in chunks}, {3})  # "Say hello."
            # continuous usage without include_usage is ignored, as vLLM does
            r = sc.chat(sim.port, max_tokens=2,
                        stream_options={"continuous_usage_stats": True})
            self.assertTrue(all("usage" not in c for _, c in r.chunks()))


class Reasoning(unittest.TestCase):
    def test_reasoning_first_then_content_counted_in_output(self):
        with sc.Sim("--ttft", "5ms", "--itl", "1ms", "--reasoning-tokens", "4") as sim:
            r = sc.chat(sim.port, max_tokens=10, stream_options={"include_usage": True})
            deltas = [c["choices"][0]["delta"] for _, c in r.chunks() if c["choices"]][1:]
            kinds = ["r" if "reasoning_content" in d else "c" for d in deltas]
            self.assertEqual("".join(kinds), "rrrrcccccc")
            usage = r.chunks()[-1][1]["usage"]
            self.assertEqual(usage["completion_tokens"], 10)
            self.assertEqual(usage["completion_tokens_details"]["reasoning_tokens"], 4)
            # the output cap applies to reasoning too
            r = sc.chat(sim.port, max_tokens=2, stream_options={"include_usage": True})
            usage = r.chunks()[-1][1]["usage"]
            self.assertEqual((usage["completion_tokens"],
                              usage["completion_tokens_details"]["reasoning_tokens"]), (2, 2))
            r = sc.chat(sim.port, stream=False, max_tokens=6)
            msg = r.json()["choices"][0]["message"]
            self.assertEqual(len(msg["reasoning_content"].split()), 4)
            self.assertEqual(len(msg["content"].split()), 2)
            rec = sim.truth(3)[0]
            self.assertEqual((rec["output_tokens"], rec["reasoning_tokens"]), (10, 4))

    def test_reasoning_field_name(self):
        with sc.Sim("--ttft", "1ms", "--itl", "1ms", "--reasoning-tokens", "2",
                    "--reasoning-field", "reasoning") as sim:
            r = sc.chat(sim.port, max_tokens=3)
            deltas = [c["choices"][0]["delta"] for _, c in r.chunks() if c["choices"]][1:]
            self.assertIn("reasoning", deltas[0])
            self.assertNotIn("reasoning_content", deltas[0])
            self.assertIn("content", deltas[2])


class Options(unittest.TestCase):
    def test_help_documents_every_flag(self):
        import subprocess
        out = subprocess.run([sc.sim_bin(), "--help"], capture_output=True, text=True,
                             timeout=10)
        self.assertEqual(out.returncode, 0)
        for flag in ["--listen", "--port-file", "--truth-log", "--ttft", "--itl",
                     "--output-tokens", "--tokens-per-chunk", "--max-batch", "--itl-per-active",
                     "--loading-for", "--chat-ready-after", "--fault-500", "--fault-429",
                     "--fault-drop", "--fault-malformed", "--fault-stall", "--fault-no-usage",
                     "--fault-no-done", "--fault-error-chunk", "--api-key", "--grace",
                     "--allow-remote", "--reasoning-field", "--seed", "--jitter"]:
            self.assertIn(flag, out.stdout)
        self.assertIn("loopback", out.stdout)

    def test_bad_flags_exit_2(self):
        import subprocess
        for args in (["--ttft", "fast"], ["--no-such-flag"], ["--fault-500", "0.7",
                     "--fault-429", "0.7"], ["--output-tokens", "uniform:9-3"]):
            out = subprocess.run([sc.sim_bin()] + args, capture_output=True, text=True,
                                 timeout=10)
            self.assertEqual(out.returncode, 2, args)
            self.assertIn("chatload-sim:", out.stderr)

    def test_non_loopback_listen_refused(self):
        """A listen address off loopback without --allow-remote, or one that does not
        resolve, is a usage error like any bad flag: exit 2 with the reason."""
        import subprocess
        out = subprocess.run([sc.sim_bin(), "--listen", "0.0.0.0:0"], capture_output=True,
                             text=True, timeout=10)
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("--allow-remote", out.stderr)
        out = subprocess.run([sc.sim_bin(), "--listen", "no-such-host.invalid:0"],
                             capture_output=True, text=True, timeout=20)
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("cannot resolve listen address", out.stderr)


if __name__ == "__main__":
    tl.main()
