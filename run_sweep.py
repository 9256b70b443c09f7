#!/usr/bin/env python3
"""Run a sweep spec: the same as `artist sweep`.

    python run_sweep.py SPEC.yaml [-j N] [--dry-run] [--out DIR] [--executor dask|ray --address ADDR]
                        [--backend analytical|ns3]
"""

import sys

from artist.cli import main

if __name__ == "__main__":
    sys.exit(main(["sweep", *sys.argv[1:]]))
