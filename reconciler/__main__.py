from reconciler.cli import entry

entry()
