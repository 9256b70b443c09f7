"""`artist report RESULTS_DIR`: the papers' claims checked against finished sweeps, with the network
ablation (artist/report/)."""

from __future__ import annotations


def add_parser(sub) -> None:
    p = sub.add_parser("report", help="write a report of finished sweeps: the papers' claims held or not, "
                                      "per network configuration",
                       description="RESULTS_DIR is a finished sweep's directory or a directory of them (e.g. "
                                   "results/). A sweep whose spec has a `report:` section gets its paper's "
                                   "headline figures beside ArtISt's, each claim marked held / not held per network "
                                   "configuration (backend, topology, calibration, contention) and a bar chart per "
                                   "claim; other sweeps get their mean JCT and makespan per policy.")
    p.add_argument("results_dir", metavar="RESULTS_DIR")
    p.add_argument("--out", default=None, help="report directory (default: RESULTS_DIR/report)")
    p.add_argument("--html", action="store_true", help="also write report.html with the figures embedded")
    p.set_defaults(func=run)


def run(args) -> int:
    from pathlib import Path

    from artist.report.evaluate import find_sweeps
    from artist.report.render import write_report

    from artist.commands._common import writable_dir

    sweeps = find_sweeps(args.results_dir)
    out = writable_dir(args.out if args.out is not None else Path(args.results_dir) / "report", "--out")
    for path in write_report(sweeps, out, as_html=args.html):
        print(f"report: {path}")
    return 0
