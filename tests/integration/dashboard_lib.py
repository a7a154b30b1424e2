"""The Grafana dashboard of the live metrics (deploy/grafana/chatload-dashboard.json) as the
tests read it: its panels, queries and variables, Grafana's variable substitution, and the
metric families its queries name.  Used by tests/integration/dashboard_test.py (against a
real Prometheus) and tests/deploy/grafana_test.py (the JSON's shape)."""

import json
import os
import re

import chatload_testlib as tl

DASHBOARD = os.path.join(tl.SOURCE_DIR, "deploy", "grafana", "chatload-dashboard.json")
DS_UID = "${DS_PROMETHEUS}"

# Grafana's built-in variables as this test gives them.  $__rate_interval is what Grafana
# computes for a 1 s scrape interval and a short range, rounded up: at least 4 scrapes.
BUILTINS = {"__rate_interval": "10s", "__interval": "1s", "__range": "1m"}

# Families of the live page that no panel shows, and why.  A family added to
# coordinator/live/metrics.c must get a panel or a line here.
NOT_ON_DASHBOARD = {
    "chatload_run_start_time_seconds": "Grafana's time axis shows when the run started",
    "chatload_run_exit_code": "exists only once the run has finished, when the page goes away",
    "chatload_stage_status": "the Stage running panel shows the stage running; how stages "
                             "ended is results.json's",
    "chatload_agents_lost_total": "the Agents missing / lost panel shows chatload_agents by state",
    "chatload_response_bytes_total": "bytes are no figure a user of an LLM server watches",
    "chatload_embedding_inputs_total": "embeddings runs only; their throughput is requests/s",
    "chatload_documents_total": "rerank and score runs only; their throughput is requests/s "
                                "(queries), documents per second is results.json's",
    "chatload_audio_seconds_total": "transcription runs only; their throughput is requests/s, "
                                    "audio seconds per second and the real-time factor are "
                                    "results.json's",
}


def load_dashboard():
    with open(DASHBOARD) as f:
        return json.load(f)


def all_panels(dash):
    """Every panel, those inside collapsed rows included."""
    out = []
    for p in dash["panels"]:
        out.append(p)
        out.extend(p.get("panels", []))
    return out


def queries(dash):
    """(panel title, refId, expr) of every query of every panel."""
    return [(p["title"], t["refId"], t["expr"]) for p in all_panels(dash)
            for t in p.get("targets", [])]


def variables(dash):
    return {v["name"]: v for v in dash["templating"]["list"]}


def var_query(v):
    q = v.get("query")
    return q["query"] if isinstance(q, dict) else q


def substitute(expr, values):
    """expr with $name and ${name} replaced from values; an unknown variable fails."""
    def one(m):
        name = m.group(1) or m.group(2)
        if name not in values:
            raise AssertionError("%r uses $%s, which the dashboard does not define" % (
                expr, name))
        return values[name]
    return re.sub(r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)", one, expr)


def families_used(dash):
    """The chatload_* families the expressions and variable queries mention (a summary's
    _sum and _count series counted as the summary)."""
    texts = [e for _, _, e in queries(dash)]
    texts += [var_query(v) for v in variables(dash).values() if v["type"] == "query"]
    names = set(re.findall(r"\bchatload_[a-z0-9_]+", "\n".join(texts)))
    return {re.sub(r"(_seconds)_(sum|count)$", r"\1", n) for n in names}


def page_families(text):
    """The families a Prometheus text page declares (# TYPE lines)."""
    return set(re.findall(r"(?m)^# TYPE (\S+) ", text))
