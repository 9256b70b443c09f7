"""Experiment scripts: each module is runnable with `python -m artist.experiments.<name>`."""
