"""Serve: HTTP service that ingests events and returns decisions."""
