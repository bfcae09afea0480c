"""Subcommands of the `sori` CLI, one module each."""
