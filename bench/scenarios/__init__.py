"""The benchmark's scenarios, one module per kind of trial; bench/bench.py runs them in order."""
