"""Benchmarks (``make bench``): figures printed beside a baseline measured in the same run."""
