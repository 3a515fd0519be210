"""The console script `reconciler` (and `python -m reconciler`): the cyclic GC's thresholds are set before the
command line is imported, then `main.entry` runs.

A run's imports build objects kept to its end (an `apply PLAN` creates ~100 dataclasses on its way): at the default
thresholds the GC rescanned them for ~30 ms of that command's ~0.25 s of imports. `main.entry` says why a run
collects rarely, and sets the same thresholds for whoever calls it directly."""

from __future__ import annotations

import gc


def entry() -> None:
    gc.set_threshold(1_000_000, 50, 50)
    from reconciler.cli.main import entry as run_command_line

    run_command_line()
