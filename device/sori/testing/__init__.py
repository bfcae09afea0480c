"""Testing: the testers' harness (`sori test`), replaying audio through the pipeline,
Home Assistant-format conformance runs, and the fakes tests use."""
