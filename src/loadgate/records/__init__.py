"""The typed records a run, a search and a comparison write, and how they are read back.

- `result`: RunResult, `result.json` (`read`, `read_all`: the one reader of it);
- `search`: SearchRecord, `search.json`; `compare`: CompareRecord, `compare.json`;
- `fields`: typed reading of JSON objects by the dataclasses' fields and type hints (the
  contract's `typed`), errors that name the field;
- `files`: reading record files, one or every one of a kind under a folder, errors that name
  the file;
- `series`: writing `series.json` (`measure.timeseries.RunSeries`, read the same way).

Records store and read, nothing more: the figures they hold are the types of what measured or
judged them (`measure/`, `judge/`), imported from there; nothing below records/ imports it.
"""
