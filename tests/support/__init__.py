"""Helpers shared by the test suites, imported as `support.…` (pyproject's pytest pythonpath)."""
