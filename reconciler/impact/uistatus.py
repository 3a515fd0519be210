"""Stage progress of a Spark Connect session, from the server's UI REST API (`/api/v1`).

A Connect client has no SparkContext and no status tracker; the server's UI says the same things over HTTP:
`/api/v1/applications` names the server's application, `/applications/ID/jobs` lists its jobs with their
task counts and job tags. The phase tags its session's operations (`SparkSession.addTag`), and Spark Connect
puts that tag, with the session's id, on every job they run (`SparkConnect_SessionTag_User_<user>_Session_
<session id>_Tag_<tag>`, Spark's `ExecuteHolder`), so a server shared by a fleet of CI runs reports to each
run the jobs of its own phase only. Completed tasks (and those skipped for a reused shuffle) of all tasks of
those jobs reach the phase, as the status tracker's do on a classic session. A UI that does not answer (a
cold server's first REST request takes seconds; disabled, another port, not allowed) costs the progress,
never the run: polls that fail are skipped, and `-v` says so.
"""

from __future__ import annotations

import json
import logging
import urllib.request
from typing import Any

log = logging.getLogger(__name__)
TIMEOUT_S = 5.0  # a poll waits this long at most (on its own thread: the run never waits for it)
MAX_BYTES = 32 * 1024 * 1024  # a server keeps spark.ui.retainedJobs (1,000) jobs: their JSON is a few MB


class UiStatus:
    """The jobs of one Connect session, as the server's UI reports them."""

    def __init__(self, base: str, marker: str) -> None:
        self.base = base.rstrip("/")
        self.marker = marker  # in a job tag of every job this status counts
        self._app: str | None = None

    def _get(self, path: str) -> Any:
        with urllib.request.urlopen(f"{self.base}/api/v1/{path}", timeout=TIMEOUT_S) as answer:
            return json.loads(answer.read(MAX_BYTES))

    def app_id(self) -> str:
        if self._app is None:
            apps = self._get("applications?status=running")
            if not apps:
                raise OSError("the UI reports no running application")
            self._app = str(apps[0]["id"])
        return self._app

    def jobs(self) -> list[dict[str, Any]]:
        """The jobs with the marker in a tag (every status), newest first."""
        return [j for j in self._get(f"applications/{self.app_id()}/jobs")
                if any(self.marker in tag for tag in j.get("jobTags", ()))]

    def tasks(self) -> tuple[int, int]:
        """(completed or skipped, total) tasks over the marked jobs."""
        jobs = self.jobs()
        done = sum(int(j.get("numCompletedTasks", 0)) + int(j.get("numSkippedTasks", 0)) for j in jobs)
        return done, sum(int(j.get("numTasks", 0)) for j in jobs)

    def stages(self) -> dict[str, int]:
        """The marked jobs and their stages that ran tasks (skipped ones not counted)."""
        jobs = self.jobs()
        ran = sum(len(j.get("stageIds", ())) - int(j.get("numSkippedStages", 0)) for j in jobs)
        return {"jobs": len(jobs), "stages": ran}


def for_tag(spark: Any, master: str, tag: str) -> UiStatus | None:
    """The UI of the Connect server `master` for the jobs of `spark`'s operations tagged `tag` (None, said with
    -v, when the UI's address is not one to ask)."""
    from reconciler.errors import ReconcilerError
    from reconciler.impact.connect import parse_remote, ui_url

    try:
        return UiStatus(ui_url(parse_remote(master)), f"_Session_{spark.session_id}_Tag_{tag}")
    except (ValueError, AttributeError, ReconcilerError) as exc:
        log.info("Spark Connect: no stage progress (the server's UI cannot be asked: %s)", exc)
        return None
