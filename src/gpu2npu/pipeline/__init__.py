"""The run: plan the input tree, process its files (in parallel), write the output atomically."""
