"""One run as named steps: baseline, load, drain, collect, judge, write."""
