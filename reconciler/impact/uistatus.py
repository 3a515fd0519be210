"""Stage progress of a Spark Connect session, from the server's UI REST API (`/api/v1`).

A Connect client has no SparkContext and no status tracker; the server's UI says the same things over HTTP:
`/api/v1/applications` names the server's application, `/applications/ID/jobs` lists its jobs with their
task counts and job tags. Spark Connect tags every job of an operation with the session it came from
(`SparkConnect_OperationTag_User_<user>_Session_<session id>_Operation_<id>`, Spark's `ExecuteHolder`), so
a server shared by a fleet of CI runs reports to each run its own jobs only. Completed tasks (and those
skipped for a reused shuffle) of all tasks of those jobs reach the phase, as the status tracker's do on a
classic session. When the UI does not answer (disabled, another port, not allowed), the progress is left
out and a `-v` line says so; the run is the same.
"""

from __future__ import annotations

import json
import logging
import urllib.request
from typing import Any

log = logging.getLogger(__name__)
TIMEOUT_S = 2.0
MAX_BYTES = 32 * 1024 * 1024  # a server keeps spark.ui.retainedJobs (1,000) jobs: their JSON is a few MB


class UiStatus:
    """The jobs of one Connect session, as the server's UI reports them."""

    def __init__(self, base: str, session_id: str) -> None:
        self.base = base.rstrip("/")
        self.marker = f"_Session_{session_id}_"
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
        """This session's jobs (every status), newest first."""
        return [j for j in self._get(f"applications/{self.app_id()}/jobs")
                if any(self.marker in tag for tag in j.get("jobTags", ()))]

    def tasks(self) -> tuple[int, int]:
        """(completed or skipped, total) tasks over this session's jobs."""
        jobs = self.jobs()
        done = sum(int(j.get("numCompletedTasks", 0)) + int(j.get("numSkippedTasks", 0)) for j in jobs)
        return done, sum(int(j.get("numTasks", 0)) for j in jobs)

    def stages(self, job_ids: set[int] | None = None) -> dict[str, int]:
        """Jobs and the stages that ran tasks (skipped ones not counted) of this session (or of `job_ids`)."""
        jobs = [j for j in self.jobs() if job_ids is None or j["jobId"] in job_ids]
        ran = sum(len(j.get("stageIds", ())) - int(j.get("numSkippedStages", 0)) for j in jobs)
        return {"jobs": len(jobs), "stages": ran}


def for_session(spark: Any, master: str) -> UiStatus | None:
    """The UI of the Connect server `master` that `spark` is a session of (None, said with -v, when it cannot
    be asked)."""
    from reconciler.errors import ReconcilerError
    from reconciler.impact.connect import parse_remote, ui_url

    try:
        status = UiStatus(ui_url(parse_remote(master)), spark.session_id)
        status.app_id()
    except (OSError, ValueError, KeyError, AttributeError, ReconcilerError) as exc:
        log.info("Spark Connect: no stage progress (the server's UI REST API cannot be asked: %s)", exc)
        return None
    return status
