"""support.fakeprom under its old name, for test_pipeline.py and test_runner.py (being edited by
others): once they import `support.fakeprom`, delete this file."""

from support.fakeprom import FakeProm

__all__ = ["FakeProm"]
