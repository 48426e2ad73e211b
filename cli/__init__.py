"""The `promem` command line: each module in this package adds one subcommand via `register`."""
