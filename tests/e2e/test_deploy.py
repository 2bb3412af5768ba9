"""What ``deploy/`` ships (issue 23): the Prometheus alert rules pass ``promtool check rules``
and their own unit tests (``promtool test rules``), the Grafana dashboard is valid against the
schema in ``tests/support``, and every metric the two query is one a real server exports after
real calls, scraped over HTTP on both stores.

``promtool`` is Debian's ``prometheus`` package: ``.ci/run`` installs it when missing, so
under ``CI=true`` its absence fails the test; elsewhere the test skips with the reason."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.e2e.helpers import arrange_well, deal, reveal, seated_table, wait_until
from tests.e2e.test_metrics import Scraped, scrape
from tests.support.clock import ManualClock
from tests.support.server import ServerThread

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "deploy" / "prometheus" / "thirteen-alerts.yml"
RULE_TESTS = REPO / "deploy" / "prometheus" / "thirteen-alerts.test.yml"
DASHBOARD = REPO / "deploy" / "grafana" / "thirteen-dashboard.json"
SCHEMA = REPO / "tests" / "support" / "grafana_dashboard.schema.json"
KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring"}
GROUPINGS = r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)"


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        reason = "promtool is missing: apt-get install prometheus (Debian's package)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; .ci/run installs it")
        pytest.skip(reason)
    return found


def metric_names(expr: str) -> set[str]:
    """The metrics a PromQL expression selects: its names that are not functions, keywords,
    label names in groupings or matchers, strings or ranges."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    expr = re.sub(r"\{[^}]*\}", " ", expr)
    expr = re.sub(r"\[[^\]]*\]", " ", expr)
    expr = re.sub(GROUPINGS, " ", expr)
    names = set()
    for found in re.finditer(r"(?<![\w:.])[A-Za-z_:][\w:]*", expr):
        word = found.group()
        if word in KEYWORDS or expr[found.end() :].lstrip().startswith("("):
            continue
        names.add(word)
    return names


def test_metric_names_are_told_from_functions_labels_and_keywords() -> None:
    expr = (
        'histogram_quantile(0.99, sum by (instance, le) (rate(x_bucket{job="a",le=~"1"}[5m])))'
        " > 0.25 and on() max(y) unless z offset 5m * on (instance) group_left () time()"
    )
    assert metric_names(expr) == {"x_bucket", "y", "z"}


def rule_exprs() -> list[str]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule["expr"] for group in groups for rule in group["rules"]]


def dashboard_exprs(dashboard: dict[str, Any]) -> list[str]:
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", [])]
    for variable in dashboard["templating"]["list"]:
        query = variable.get("query")
        if isinstance(query, dict) and query["query"].startswith("label_values("):
            inner = query["query"].removeprefix("label_values(").rsplit(",", 1)[0]
            exprs.append(inner)
    return exprs


def test_the_alert_rules_pass_promtool_and_their_unit_tests() -> None:
    tool = promtool()
    checked = subprocess.run(
        [tool, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=120
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = subprocess.run(
        [tool, "test", "rules", RULE_TESTS.name],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=RULE_TESTS.parent,
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    alerts = {
        rule["alert"]
        for group in yaml.safe_load(RULES.read_text())["groups"]
        for rule in group["rules"]
    }
    tests = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    tried = {case["alertname"] for test in tests for case in test["alert_rule_test"]}
    assert tried == alerts, "every alert has a unit test"


def test_the_dashboard_is_valid_against_the_schema_with_panels_in_place() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    jsonschema.validate(dashboard, json.loads(SCHEMA.read_text()))
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids)), "panel ids are unique"
    for panel in dashboard["panels"]:
        place = panel["gridPos"]
        assert place["x"] + place["w"] <= 24, f"{panel['title']} is wider than the grid"


def test_the_schema_refuses_a_panel_without_its_query() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    broken = next(p for p in dashboard["panels"] if p["type"] == "timeseries")
    del broken["targets"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(dashboard, json.loads(SCHEMA.read_text()))


@pytest.fixture
def metered(store: dict[str, str], tmp_path: Path, clock: ManualClock) -> Iterator[ServerThread]:
    running = ServerThread(tmp_path / "data", store, clock, metrics=True)
    yield running
    running.stop()


def test_every_metric_the_dashboard_and_the_alerts_query_is_one_the_server_exports(
    metered: ServerThread,
) -> None:
    seated_table(metered, "t1", {"ann": 1000, "bob": 1000})
    dealt = deal(metered, "t1")
    arrange_well(metered, dealt)
    reveal(metered, dealt.round_id)

    def signed() -> Scraped | None:
        scraped = scrape(metered)
        return scraped if "thirteen_log_checkpoint_size_leaves" in scraped else None

    scraped = wait_until(signed, "the first signed checkpoint")
    queried: set[str] = set()
    for expr in rule_exprs() + dashboard_exprs(json.loads(DASHBOARD.read_text())):
        queried |= metric_names(expr)
    assert queried  # the extraction found the names
    assert sorted(queried - set(scraped)) == []
