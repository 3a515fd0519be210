from reconciler.cli import main

main()
