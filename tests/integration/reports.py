"""Comparing two impact reports of the same inputs: identical but for the moment each was assessed
(`consumers.assessedAtMs`, the report's own clock, which the offsets' age is measured against)."""

from __future__ import annotations

import re

_CLOCK = re.compile(r'"assessedAtMs": \d+')


def unclocked(report: str) -> str:
    """`report` (the impact's JSON as printed) with its assessment time zeroed; a report without one unchanged."""
    return _CLOCK.sub('"assessedAtMs": 0', report)
