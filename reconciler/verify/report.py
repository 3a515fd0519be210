"""The answer of `apply --verify`: per entity and key, taken / not taken / broker unreachable, with one line
per problem (brokers with the same answer share a line) in text, Markdown and JSON."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.render.markdown import code_markdown, escape_markdown
from reconciler.verify.expect import Expectation
from reconciler.verify.judge import Outcome, Status

VERIFY_FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class Result:
    expectation: Expectation
    outcome: Outcome


@dataclass(frozen=True, slots=True)
class Problem:
    status: Status
    entity: str
    key: str
    where: str  # "broker 2", "brokers 1, 3", "" (cluster-wide answers: topics, quotas)
    detail: str

    @property
    def line(self) -> str:
        what = "not taken" if self.status == "not_taken" else "no answer"
        where = f" on {self.where}" if self.where else ""
        return f"{self.entity} {self.key}: {what}{where}: {self.detail}"


@dataclass(frozen=True, slots=True)
class VerifyReport:
    cluster: str
    results: tuple[Result, ...]
    brokers: tuple[int, ...]  # the brokers asked (the cluster's declared and registered brokers)
    elapsed_s: float

    def count(self, status: Status) -> int:
        return sum(1 for r in self.results if r.outcome.status == status)

    @property
    def ok(self) -> bool:
        return all(r.outcome.status == "taken" for r in self.results)

    def problems(self) -> tuple[Problem, ...]:
        """Not-taken first, then unanswered; brokers with the same answer for a key share one problem."""
        grouped: dict[tuple[Status, str, str, str], list[str]] = defaultdict(list)
        for r in self.results:
            if r.outcome.status == "taken":
                continue
            e = r.expectation
            grouped[(r.outcome.status, e.entity, e.key, r.outcome.detail)].append(
                e.target if e.kind == "broker" else "")
        out = []
        for (status, entity, key, detail), targets in grouped.items():
            ids = sorted({t for t in targets if t}, key=int)
            where = "" if not ids else (f"broker {ids[0]}" if len(ids) == 1 else "brokers " + ", ".join(ids))
            out.append(Problem(status, entity, key, where, detail))
        order = {"not_taken": 0, "unreachable": 1, "taken": 2}
        return tuple(sorted(out, key=lambda p: (order[p.status], p.entity, p.key, p.where)))

    @property
    def summary(self) -> str:
        keys = len({(r.expectation.entity, r.expectation.key) for r in self.results})
        if self.ok:
            return (f"{self.cluster}: verified: every broker took every change ({keys} keys on "
                    f"{len(self.brokers)} brokers, {self.elapsed_s:.1f} s)")
        return (f"{self.cluster}: NOT verified: {self.count('not_taken')} answers not taken, "
                f"{self.count('unreachable')} unanswered, {self.count('taken')} taken ({keys} keys, "
                f"{self.elapsed_s:.1f} s)")

    def text_lines(self) -> list[str]:
        return [self.summary, *(f"  {p.line}" for p in self.problems())]

    def to_json(self) -> dict[str, Any]:
        return {
            "formatVersion": VERIFY_FORMAT_VERSION,
            "cluster": self.cluster,
            "verified": self.ok,
            "brokers": list(self.brokers),
            "taken": self.count("taken"),
            "notTaken": self.count("not_taken"),
            "unreachable": self.count("unreachable"),
            "elapsedSeconds": round(self.elapsed_s, 3),
            "problems": [{"status": p.status, "entity": p.entity, "key": p.key, "where": p.where,
                          "detail": p.detail} for p in self.problems()],
        }


def markdown(reports: Sequence[VerifyReport]) -> str:
    """A Markdown section; manifest- and broker-derived text escaped as in the PR comment."""
    escape = escape_markdown
    lines = ["### Verification", ""]
    for report in reports:
        mark = "✅" if report.ok else "❌"
        lines.append(f"{mark} {escape(report.summary)}")
        lines.extend(f"- **{'not taken' if p.status == 'not_taken' else 'no answer'}** "
                     f"{code_markdown(p.entity)} {code_markdown(p.key)}{' on ' + escape(p.where) if p.where else ''}: "
                     f"{escape(p.detail)}" for p in report.problems())
        lines.append("")
    return "\n".join(lines)
