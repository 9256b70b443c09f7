"""`artist plot RESULTS_DIR`: redraw a finished sweep's figures into RESULTS_DIR/plots/."""

from __future__ import annotations


def add_parser(sub) -> None:
    p = sub.add_parser("plot", help="redraw the figures of a finished sweep",
                       description="Makespan, JCT (mean, p99, CDF), communication latency and queueing delay "
                                   "vs racks, per policy, from RESULTS_DIR/results.parquet; PNG and PDF.")
    p.add_argument("results_dir", metavar="RESULTS_DIR", help="a sweep's output directory (holds results.parquet)")
    p.set_defaults(func=run)


def run(args) -> int:
    from artist.sweep.plots import plot_sweep  # matplotlib: only when plotting

    written = plot_sweep(args.results_dir)
    print(f"plots: {written[0].parent}/")
    for path in written:
        print(f"  {path.name}")
    return 0
