from reconciler.cli.main import entry

entry()
