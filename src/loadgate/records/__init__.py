"""The typed records a run, a search and a comparison write, and how they are read back."""
