"""`--help` as a newcomer needs it: commands in workflow order with whole one-line summaries, and each
command's help ending with its exit codes and one example."""

from __future__ import annotations

import click

# The order a user meets the commands in: check, preview, inspect, change, then the GitOps and fleet tools.
ORDER = ("validate", "plan", "show", "apply", "reassignments", "describe", "seal", "reconcile", "import", "snapshot",
         "impact", "migrate-check", "version")

_EXITS = {
    "validate": ("0  the manifests are valid (warnings allowed)", "1  at least one error"),
    "plan": ("0  planned (changes or not, without --detailed-exitcode)", "1  error: invalid manifests, "
             "unreachable ZooKeeper, ...", "2  the plan has changes (only with --detailed-exitcode)"),
    "show": ("0  shown", "1  the file cannot be read, or was edited after planning (its id does not match)"),
    "apply": ("0  applied (or nothing to apply)", "1  error, refusal (destructive change, missing secret, KRaft) "
              "or cancelled", "3  stale plan or another apply holds the lock: nothing of that batch written",
              "4  --verify: written, but a broker did not report a change as expected, or did not answer"),
    "reassignments": ("0  listed (or cancelled)", "1  error: unreachable brokers, a cancel refused or its throttles "
                      "not removed"),
    "describe": ("0  described", "1  error: unknown cluster, entity or key; unreachable ZooKeeper"),
    "seal": ("0  sealed value printed", "1  error: no passwordEncoder, unknown broker, missing secret"),
    "reconcile": ("0  every cluster reconciled (or in sync)",
                  "1  at least one cluster failed, was refused, or (--verify) was not taken by its brokers"),
    "import": ("0  imported, and a plan on the result shows no changes", "1  error, or the imported manifests "
               "would still change something"),
    "snapshot": ("0  inventory written", "1  error"),
    "impact": ("0  report written", "1  error"),
    "migrate-check": ("0  nothing found", "1  error: invalid manifests, unreachable ZooKeeper, no secret",
                      "2  findings: a password the controllers cannot decode, configs or quotas KRaft ignores or "
                      "rejects, ACLs or SCRAM credentials to prepare for"),
    "version": ("0  always",),
}
_EXAMPLES = {
    "validate": "reconciler validate prod-eu-1 --format github",
    "plan": "reconciler plan prod-eu-1 --out plan.json --detailed-exitcode",
    "show": "reconciler show plan.json --format markdown",
    "apply": "reconciler apply plan.json --verify",
    "reassignments": "reconciler reassignments prod-eu-1 --cancel --partition orders-0",
    "describe": "reconciler describe prod-eu-1 topics/orders retention.ms",
    "seal": "printf %s \"$KEYSTORE_PASSWORD\" | reconciler seal prod-eu-1",
    "reconcile": "reconciler reconcile --once --repo-url https://git.example.com/kafka-config.git",
    "import": "reconciler import prod-eu-1 --zookeeper zk1:2181/kafka --kafka-version 3.6",
    "snapshot": "reconciler snapshot --out inventory/",
    "impact": "reconciler impact --git-base origin/main --inventory inventory/ --out report/",
    "migrate-check": "reconciler migrate-check prod-eu-1 --controller-secret-file controller-secret.txt",
    "version": "reconciler --version",
}


def epilog(name: str) -> str:
    """Exit codes and an example, laid out verbatim (click's `\\b` stops it re-wrapping a paragraph)."""
    exits = "\n".join(f"  {line}" for line in _EXITS[name])
    return f"\b\nExit codes:\n{exits}\n\n\b\nExample:\n  {_EXAMPLES[name]}"


def summary(command: click.Command) -> str:
    """The whole first line of the command's help (click would cut it to the terminal's width)."""
    text = command.short_help or (command.help or "").strip()
    return text.splitlines()[0].strip() if text else ""


class WorkflowGroup(click.Group):
    """Lists commands in workflow order (not alphabetically) with whole summaries."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        known = [name for name in ORDER if name in self.commands]
        return known + sorted(set(self.commands) - set(known))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, summary(cmd)) for name in self.list_commands(ctx)
                if (cmd := self.get_command(ctx, name)) is not None and not cmd.hidden]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def document(command: click.Command) -> None:
    """Append the exit codes and the example to `command`'s help."""
    if command.name in _EXITS:
        command.epilog = epilog(command.name)
