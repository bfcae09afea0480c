"""Serving: the drivers that wire I/O to what `assemble/` built: the daemon, the
conversation's turns, the HTTP API and its access, the Wyoming server."""
