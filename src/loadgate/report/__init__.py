"""The end-of-run tables and the report page.

- `tables`: the rich tables `loadgate run` prints (verdict, loss ledger, figures);
- `content`: read a results folder (`load`) and assemble the report (`build`);
- `naming`: a run's revision with its settings, its scenario; `runs`: a run's figures;
  `rows`: rows per revision and scenario; `capacity`: capacities and knee curves per search;
- `page`: the page as Markdown and HTML; `plots`: its PNGs.
"""
