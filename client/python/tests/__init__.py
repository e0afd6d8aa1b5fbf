"""Tests of the Python client against a real dedupd (see server.py)."""
