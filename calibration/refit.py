"""Re-make every shipped calibration profile: the exact `artist calibrate` options of each, and why.

    python calibration/refit.py [--backend analytical|ns3] [--only NAME ...] [--list] [--cache-dir DIR | --no-cache]
    python calibration/refit.py --loo [--backend analytical|ns3]   # the leave-one-out table of calibration/README.md
    python calibration/refit.py --nccl     # the table of NCCL's own pick against the shipped settings (README)

Runs in one process, so the ns-3 fits share one ns-3 worker (start-up ~20-50 s).
Run from the repository root; the profiles are written to calibration/profiles/.
The backend is answered through artist's latency cache, as `artist calibrate` does by default
($ARTIST_CACHE_DIR, else ~/.cache/artist; --cache-dir DIR another one, --no-cache none): no
answer changes, a re-fit after a change of the fitting code runs no ns-3 simulation, and an
interrupted re-fit continues from the answers already stored.

Choices common to every fit (see calibration/README.md for the numbers behind them):
- channels = NICs per node (8 on DGX H100 and A3 Mega, 4 on p4de): NCCL runs at least
  one ring per NIC, and in collectives.py channel c's ring leaves each machine through
  a different GPU's NIC. On one machine the channel count changes no analytical answer
  (all channels share each GPU's NVSwitch port).
- The H100 pair is fitted on the 1 x 8 and 2 x 1 logs only and checked on the 10 x 1 log of the
  same cluster (--holdout): the check of extrapolation in node count. It is written with --force:
  on the 10 x 1 log it is worse than uncalibrated for all_reduce and reduce_scatter (see
  calibration/README.md for the numbers and why), and the warning is recorded in the profile.
- --regimes auto (the default): every size >= 1 MiB is fitted, one correction per NCCL size
  regime of each log (artist.calibration.regimes: where the measured incremental bandwidth
  changes by > 1.5x; stretches of < 3 sizes join a neighbour), sizes alternating between fit
  and held-out inside each regime.
- The two 2 x 8 logs (A3 Mega, p4de) use the hierarchical algorithm: their busbw (339 and
  78 GB/s) exceeds what any ring can reach over their NICs (8 x 25 = 200 and 4 x 12.5 = 50
  GB/s), so NCCL ran a tree-like algorithm, whose inter-node traffic per node on 2 nodes is
  the payload S, as in collectives.py's hierarchical all-reduce (a ring sends 2(N-1)/N x S).
- ns-3 fits stop at --max-bytes (2 GiB) to bound run time where a log goes higher (the fitted range
  is stored in each profile), except stas00's: its 16 MiB - 1 GiB sizes are up to 9 % off any
  affine curve (busbw 106 -> 229 GB/s with a dip at 128-256 MiB), so a range cut at 2 GiB leaves
  too few steady sizes in its upper regime (the earlier last-regime-only analytical fit, cut the
  same way, reached only 5.0 %).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

D = "calibration/data/"
H100_LOGS = [D + "xxrjun_1node_8xH100_allcoll.txt", D + "xxrjun_2node_2xH100_1gpn_smoke.txt"]
H100_HOLDOUT = [D + "xxrjun_10node_10xH100_1gpn_allcoll.txt"]
# every 10-node log of that cluster (1, 2, 4, 8 GPUs per node): the held-out checks of the --nccl table
H100_TEN_NODES = [D + f"xxrjun_10node_{10 * g}xH100_{g}gpn_allcoll.txt" for g in (1, 2, 4, 8)]
GCP_NOTE = ("the log's network, GPUDirect-TCPXO (TCP over 8 x 200 Gb/s Ethernet NICs with a user-space receive path), "
            "is not modelled by either backend (analytical: NCCL's InfiniBand-class NET latencies; ns-3: a lossless "
            "window transport); the fitted hop latency absorbs its ~0.9 ms fixed cost per all-reduce at >= 16 MiB")
AWS_NOTE = ("the log's network, EFA v1 (SRD transport through aws-ofi-nccl, 4 x 100 Gb/s NICs each shared by 2 GPUs), "
            "is not modelled as such: the topology gives each GPU half a NIC (50 Gb/s) and the backends a lossless "
            "fabric")
STAS_NOTE = ("the log's columns were trimmed by hand (size / time / algbw / busbw only) and its GPUs are A100 SXM on "
             "NVLink 3, modelled by topologies/dally-3tier.yaml's machine tier (600 GB/s bidirectional per GPU)")

# name -> (backend, topology, logs, extra options)
FITS = {
    "h100-analytical": ("analytical", "topologies/h100-dgx.yaml", H100_LOGS,
                        ["--channels", "8", "--holdout", *H100_HOLDOUT, "--force"]),
    "h100-ns3": ("ns3", "topologies/h100-dgx.yaml", H100_LOGS,
                 ["--channels", "8", "--max-bytes", str(2 << 30), "--holdout", *H100_HOLDOUT, "--force"]),
    "gcp-a3mega-analytical": ("analytical", "calibration/topologies/gcp-a3mega.yaml",
                              [D + "gcp_a3mega_2node_16xH100_tcpxo.txt"],
                              ["--channels", "8", "--algorithm", "hierarchical", "--note", GCP_NOTE]),
    "gcp-a3mega-ns3": ("ns3", "calibration/topologies/gcp-a3mega.yaml", [D + "gcp_a3mega_2node_16xH100_tcpxo.txt"],
                       ["--channels", "8", "--algorithm", "hierarchical", "--max-bytes", str(2 << 30),
                        "--note", GCP_NOTE]),
    "aws-p4de-analytical": ("analytical", "calibration/topologies/aws-p4de.yaml",
                            [D + "aws_p4de_2node_16xA100_efa.txt"],
                            ["--channels", "4", "--algorithm", "hierarchical", "--layout", "2x8", "--note", AWS_NOTE]),
    "aws-p4de-ns3": ("ns3", "calibration/topologies/aws-p4de.yaml", [D + "aws_p4de_2node_16xA100_efa.txt"],
                     ["--channels", "4", "--algorithm", "hierarchical", "--layout", "2x8", "--note", AWS_NOTE]),
    "stas00-a100-analytical": ("analytical", "topologies/dally-3tier.yaml",
                               [D + "stas00_1node_8xA100_allreduce_columns_trimmed.txt"],
                               ["--channels", "8", "--layout", "1x8", "--note", STAS_NOTE]),
    "stas00-a100-ns3": ("ns3", "topologies/dally-3tier.yaml", [D + "stas00_1node_8xA100_allreduce_columns_trimmed.txt"],
                        ["--channels", "8", "--layout", "1x8", "--note", STAS_NOTE]),
}


def argv_of(name: str, cache_dir: str | None = None, no_cache: bool = False) -> list[str]:
    backend, topology, logs, extra = FITS[name]
    cache = ["--no-cache"] if no_cache else [] if cache_dir is None else ["--cache-dir", cache_dir]
    return ["calibrate", "--topology", topology, "--logs", *logs, "--backend", backend, *extra, *cache,
            "--out", f"calibration/profiles/{name}.yaml", "--plot", f"calibration/profiles/{name}-busbw.png", "--quiet"]


# Logs measured on one machine type, fitted together; leave-one-out folds run inside each family
# (a profile fits one topology's links: an A100 log says nothing of an H100 machine's).
FAMILIES = {"h100": ("topologies/h100-dgx.yaml", H100_LOGS + H100_HOLDOUT, ["--channels", "8"]),
            "gcp-a3mega": FITS["gcp-a3mega-analytical"][1:],
            "aws-p4de": FITS["aws-p4de-analytical"][1:],
            "stas00-a100": FITS["stas00-a100-analytical"][1:]}
LOO_BEGIN = "<!-- leave-one-out table: begin (calibration/refit.py --loo) -->"
LOO_END = "<!-- leave-one-out table: end -->"


def _option(extra: list[str], name: str, default=None):
    return extra[extra.index(name) + 1] if name in extra else default


def leave_one_out(backends: list[str], cache_dir: str | None = None) -> str:
    """Per backend and log: a profile fitted on the other logs of its family, checked on it (median
    |error| over sizes >= 1 MiB, per collective); a log alone in its family is checked against no
    calibration at all (nothing else was measured on that machine)."""
    from artist.calibration.build import collect_points, error_rows, fit_profile
    from artist.calibration.fit import parse_layout
    from artist.network.stack import CommSpec
    from artist.topology import load_topology

    rows = ["| backend | log | collective | fitted on | sizes | uncalibrated | calibrated | not worse |",
            "|---|---|---|---|---|---|---|---|"]
    for backend in backends:
        for family, (topology_path, logs, extra) in FAMILIES.items():
            topology = load_topology(topology_path)
            channels = int(_option(extra, "--channels", 1))
            spec = CommSpec(backend, _option(extra, "--algorithm", "ring"), channels, cache=cache_dir)
            model = spec.build(topology)
            layout = _option(extra, "--layout")
            options = dict(layout=parse_layout(layout) if layout else None,
                           max_bytes=(2 << 30) if backend == "ns3" else None, min_bytes=1 << 20)
            for left_out in logs:
                others = [log for log in logs if log != left_out]
                held = collect_points(model, topology, [left_out], **options)
                if others:
                    fitted = collect_points(model, topology, others, **options)
                    profile, points = fit_profile("loo", topology, model.identity(), fitted, holdout=held, force=True)
                    table = profile.fit["holdout"]["rows"]
                    on = ", ".join(Path(o).name for o in others)
                else:
                    table = error_rows([p for lp in held for p in lp.points])  # uncalibrated: corrected = None
                    for r in table:
                        r["median_err_calibrated_pct"] = r["median_err_uncalibrated_pct"]
                    on = "(no other log of this machine: uncalibrated)"
                for r in table:
                    ok = r["median_err_calibrated_pct"] <= r["median_err_uncalibrated_pct"]
                    rows.append(f"| {backend} | {r['log']} | {r['collective']} | {on} | {r['sizes']} | "
                                f"{r['median_err_uncalibrated_pct']:.2f} % | {r['median_err_calibrated_pct']:.2f} % | "
                                f"{'yes' if ok else '**no**'} |")
            if hasattr(model, "close"):
                model.close()
    return "\n".join(rows)


NCCL_BEGIN = "<!-- nccl table: begin (calibration/refit.py --nccl) -->"
NCCL_END = "<!-- nccl table: end -->"


def nccl_table(cache_dir: str | None = None) -> str:
    """Per shipped analytical fit's logs (and holdouts) and tuned collective: median |error| uncalibrated and
    calibrated with the shipped settings, and with the analytical backend's `nccl` algorithm (NCCL's own pick
    per size) fitted the same way on the same logs; the H100 fit is checked on every 10-node log."""
    from artist.calibration.build import collect_points, error_rows, fit_profile
    from artist.calibration.fit import parse_layout
    from artist.network.nccl.chosen import TUNED_KINDS
    from artist.network.stack import CommSpec
    from artist.topology import load_topology

    def errors(spec, topology, logs, holdout, layout):
        model = spec.build(topology)
        options = dict(layout=parse_layout(layout) if layout else None, min_bytes=1 << 20)
        fitted = collect_points(model, topology, logs, **options)
        held = collect_points(model, topology, holdout, **options) if holdout else None
        _, points = fit_profile("nccl-table", topology, model.identity(), fitted, holdout=held or (), force=True)
        return {(r["log"], r["collective"]): r for r in error_rows(points)}

    lines = ["| log | collective | shipped uncal. | **nccl uncal.** | shipped cal. | nccl cal. |",
             "|---|---|---|---|---|---|"]
    for name, (backend, topology_path, logs, extra) in FITS.items():
        if backend != "analytical":
            continue
        topology = load_topology(topology_path)
        holdout = H100_TEN_NODES if logs == H100_LOGS else []
        layout = _option(extra, "--layout")
        algorithm = _option(extra, "--algorithm", "ring")
        shipped = errors(CommSpec(backend, algorithm, int(_option(extra, "--channels", 1)), cache=cache_dir),
                         topology, logs, holdout, layout)
        nccl = errors(CommSpec(backend, "nccl", 1, cache=cache_dir), topology, logs, holdout, layout)
        for (log, collective), r in shipped.items():
            if collective not in TUNED_KINDS:
                continue
            n = nccl[(log, collective)]
            held = " (held out)" if any(Path(h).name == log for h in holdout) else ""
            lines.append(f"| {log}{held} | {collective} | {r['median_err_uncalibrated_pct']:.1f} % ({algorithm} x"
                         f"{_option(extra, '--channels', 1)}) | **{n['median_err_uncalibrated_pct']:.1f} %** | "
                         f"{r['median_err_calibrated_pct']:.1f} % | {n['median_err_calibrated_pct']:.1f} % |")
    return "\n".join(lines)


def write_table(table: str, begin: str = LOO_BEGIN, end: str = LOO_END,
                readme: Path = REPO / "calibration" / "README.md") -> None:
    text = readme.read_text()
    if begin not in text:
        raise SystemExit(f"{readme}: no '{begin}' marker to put the table under")
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1] if end in rest else ""
    readme.write_text(f"{head}{begin}\n{table}\n{end}{tail}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", choices=("analytical", "ns3"), default=None)
    ap.add_argument("--only", nargs="+", choices=sorted(FITS), default=None)
    ap.add_argument("--list", action="store_true", help="print the commands only")
    ap.add_argument("--loo", action="store_true",
                    help="re-make the leave-one-out table in calibration/README.md instead of the profiles")
    ap.add_argument("--nccl", action="store_true",
                    help="re-make the table of NCCL's own pick (analytical --algorithm nccl) against the shipped "
                         "settings in calibration/README.md instead of the profiles")
    cache = ap.add_mutually_exclusive_group()
    cache.add_argument("--cache-dir", default=None,
                       help="latency cache directory for the backend's answers (default: artist's default cache)")
    cache.add_argument("--no-cache", action="store_true", help="do not read or write the latency cache")
    args = ap.parse_args(argv)
    names = [n for n in (args.only or FITS) if args.backend in (None, FITS[n][0])]
    if args.list:
        for n in names:
            print("artist " + " ".join(f'"{a}"' if " " in a else a for a in argv_of(n, args.cache_dir, args.no_cache)))
        return 0
    import os

    from artist.cli import main as artist_main

    if args.cache_dir:
        args.cache_dir = str(Path(args.cache_dir).resolve())
    os.chdir(REPO)
    if args.loo or args.nccl:
        from artist.network.cache.store import CACHE_FILE_NAME, default_cache_dir

        cache = None if args.no_cache else str(Path(args.cache_dir or default_cache_dir()) / CACHE_FILE_NAME)
        if args.nccl:
            table = nccl_table(cache)
            write_table(table, NCCL_BEGIN, NCCL_END)
        else:
            table = leave_one_out([args.backend] if args.backend else ["analytical", "ns3"], cache)
            write_table(table)
        print(table)
        return 0
    for n in names:
        started = time.perf_counter()
        print(f"===== {n}", flush=True)
        code = artist_main(argv_of(n, args.cache_dir, args.no_cache))
        print(f"===== {n}: exit {code}, {time.perf_counter() - started:.0f} s", flush=True)
        if code:
            return code
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
