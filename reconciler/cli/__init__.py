"""The command line (click). `main.py` holds the group and maps errors to exit codes; `context.py` what every
command shares; one module per command family: validate, plan (plan and apply), seal, gitops (reconcile and the
`plan --git-base` body), importer, impact (snapshot and impact)."""
