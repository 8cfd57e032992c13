"""Reading the pipeline: Prometheus and Loki clients, counters, pipeline figures, series."""
