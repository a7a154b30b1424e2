"""deploy/grafana/chatload-dashboard.json as Grafana's import needs it, checked without
Grafana: every panel and query on the ${DS_PROMETHEUS} datasource variable (no __inputs, which
only the import form resolves), unique panel ids, panels inside the 24-column grid and not
overlapping; and every metric family coordinator/live/metrics.c exports is on a panel or named
in dashboard_lib.NOT_ON_DASHBOARD with its reason, and no panel queries a family it does not
export.  tests/integration/dashboard_test.py runs the queries against a real Prometheus."""

import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploy_testlib as dt  # noqa: E402
import dashboard_lib as dl  # noqa: E402  (tests/integration, on the path deploy_testlib set)


class Shape(unittest.TestCase):
    """What Grafana's import needs, checked without Grafana."""

    def test_panels_use_the_datasource_variable_and_fit_the_grid(self):
        dash = dl.load_dashboard()
        vs = dl.variables(dash)
        self.assertEqual(vs["DS_PROMETHEUS"]["type"], "datasource")
        self.assertEqual(vs["DS_PROMETHEUS"]["query"], "prometheus")
        self.assertNotIn("__inputs", dash, "__inputs is resolved by the import form only; "
                         "the datasource variable works for provisioning too")
        ids = [p["id"] for p in dl.all_panels(dash)]
        self.assertEqual(len(ids), len(set(ids)), "panel ids repeat: %s" % ids)
        cells = set()
        for p in dl.all_panels(dash):
            g = p["gridPos"]
            with self.subTest(panel=p["title"]):
                self.assertTrue(0 <= g["x"] and g["x"] + g["w"] <= 24, g)
                for x in range(g["x"], g["x"] + g["w"]):
                    for y in range(g["y"], g["y"] + g["h"]):
                        self.assertFalse((x, y) in cells, "panels overlap at %s" % ((x, y),))
                        cells.add((x, y))
                if p["type"] == "row":
                    continue
                self.assertEqual(p["datasource"], {"type": "prometheus", "uid": dl.DS_UID})
                self.assertTrue(p.get("targets"), "a panel without a query")
                for t in p["targets"]:
                    self.assertEqual(t["datasource"], {"type": "prometheus", "uid": dl.DS_UID})
                    self.assertTrue(t["expr"].strip())
        for v in vs.values():
            if v["type"] == "query":
                self.assertEqual(v["datasource"], {"type": "prometheus", "uid": dl.DS_UID})

    def test_every_family_of_the_page_is_on_a_panel_or_excused(self):
        """The families are read from metrics.c's source, not a run: the names there are
        string literals (docs/metrics.md lists the same)."""
        with open(os.path.join(dt.SOURCE_DIR, "coordinator", "live", "metrics.c")) as f:
            src = f.read()
        exported = set(re.findall(r'"(chatload_[a-z0-9_]+)', src))
        exported = {n for n in exported if not n.endswith("_")}  # prefixes built on
        used = dl.families_used(dl.load_dashboard())
        missing = sorted(n for n in exported - used - set(dl.NOT_ON_DASHBOARD))
        self.assertEqual(missing, [], "families on the live page that no panel shows: add a "
                         "panel or a line in NOT_ON_DASHBOARD")
        self.assertEqual(sorted(used - exported), [], "panels query names the page lacks")
        self.assertEqual(sorted(set(dl.NOT_ON_DASHBOARD) & used), [],
                         "NOT_ON_DASHBOARD names a family a panel shows")


if __name__ == "__main__":
    dt.main()
