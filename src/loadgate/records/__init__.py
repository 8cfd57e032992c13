"""The typed record of a run, and how records are stored and read back: storing and reading,
nothing more (what a search, a comparison or a matrix decides, and their records, live with
them in `loadgate.capacity`).

- `result`: RunResult, `result.json` (`read`, `read_all`: the one reader of it);
- `fields`: typed reading of JSON objects by the dataclasses' fields and type hints (the
  contract's `typed`), errors that name the field;
- `files`: reading record files, one or every one of a kind under a folder, errors that name
  the file;
- `series`: writing `series.json` (`measure.timeseries.RunSeries`, read the same way).

`search.json`, `compare.json` and a matrix's records are `capacity.search.record`,
`capacity.compare.record` and `capacity.matrix.record`.

The figures a record holds are the types of what measured or judged them (`measure/`,
`judge/`; its `resources` block is `measure.resources`), imported from there: nothing below
records/ imports it.
"""
