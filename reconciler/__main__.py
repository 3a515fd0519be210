from reconciler.cli.entry import entry

entry()
