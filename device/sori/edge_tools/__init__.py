"""Tools for running the edge at fleet scale: `sori edge bench` (load test of an
OpenAI-compatible server) and `sori edge plan` (capacity and cost simulation)."""
