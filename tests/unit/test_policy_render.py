"""The policy sections of the PR comment and of the impact reports: counts, order, and manifest text escaped."""

from __future__ import annotations

from reconciler.errors import Diagnostic
from reconciler.impact.html import render_html
from reconciler.impact.report import render_markdown
from reconciler.model import SourceRef
from reconciler.plan import Plan
from reconciler.render.pr_comment import render_comment
from tests.unit.test_impact_units import summary

EVIL = "<script>alert(1)</script> @org/admins [x](http://evil)"


def _diag(severity: str, rule: str, line: int) -> Diagnostic:
    return Diagnostic(severity, f"policy p, rule {rule}: cluster a: topics/t: {EVIL}",  # type: ignore[arg-type]
                      SourceRef("clusters/a/topics.yaml", line), f"policy:p/{rule}")


def test_the_comment_has_a_policy_section_with_errors_first_and_text_escaped() -> None:
    warning = _diag("warning", "w", 3)
    plan = Plan("a", diagnostics=(warning,))
    out = render_comment([plan], base="main", diagnostics=[_diag("error", "e", 9)],
                         policy_changes=[f"policy p changed: {EVIL}"])
    assert "### 🛑 Policy: 1 error(s) block this pull request, 1 warning(s)" in out
    section = out.split("### 🛑 Policy")[1]
    assert section.index("`clusters/a/topics.yaml:9`") < section.index("`clusters/a/topics.yaml:3`")
    assert "<script>" not in out and "&lt;script&gt;" in out and "@\u200borg/admins" in out and "\\[x\\]" in out
    assert "**This branch changes policies.**" in out
    assert "Invalid manifests" not in out  # only policy errors: no second section for them
    assert out.count("rule w") == 1  # the warning is in the Policy section, not again among the plan's warnings


def test_no_section_without_policies() -> None:
    assert "Policy" not in render_comment([Plan("a")], base="main")


def test_impact_reports_show_the_policy_counts_escaped() -> None:
    s = summary()
    s["policy"] = {"rules": [{"policy": EVIL, "rule": "r", "severity": "error", "clusters": 2, "violations": 5}],
                   "byCluster": [{"cluster": "c1", "policy": EVIL, "rule": "r", "severity": "error", "violations": 5}],
                   "errors": 5, "warnings": 0, "clusters": 1}
    md = render_markdown(s)
    assert "### Policy: 5 error(s), 0 warning(s) in 1 cluster(s), after the change" in md
    assert f"| `{EVIL}` | `r` | error | 2 | 5 |" in md  # a code span, as the report shows every name
    html = render_html(s)
    assert "Policy violations after the change" in html and "<script>alert" not in html
    assert "Policy" not in render_html(summary()) and "### Policy" not in render_markdown(summary())
