"""Bench: CPMBench-format timelines, metrics, judges, generator, importers, baselines, harness."""
