"""The ground floor every stage may use: events, errors, the clock, the config, the
home, Korean text helpers, redaction, logs, metrics and the shipped files."""
