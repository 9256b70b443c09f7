"""`artist report`: claims judged per network configuration, every printed number traced to the results."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from artist.errors import InputError
from artist.report.evaluate import HELD, NA, NOT_HELD, judge
from artist.report.spec import Claim
from artist.sweep.run import run_sweep
from artist.sweep.spec import load_sweep_spec

ROOT = Path(__file__).resolve().parents[1]
HOUR = 1 / 3600

SPEC = f"""
name: rep
topology: {ROOT / 'topologies/dally-3tier.yaml'}
racks: [1, 2]
policies: [fifo, tiresias, gandiva]
workloads:
  - label: batch-20
    spec: batch:n=20,gpus=4|8|16,min_iter=1000,max_iter=5000,models=resnet50|vgg11
seeds: [0, 1]
comm: {{backend: [analytical, none]}}
report:
  paper: "Test paper"
  source: "made up for the test"
  primary: {{backend: analytical}}
  claims:
    - id: jct
      text: "Tiresias beats FIFO"
      metric: jct_mean_s
      order: [tiresias, fifo]
      per: racks
      scale: {HOUR!r}
      unit: h
      paper: {{tiresias: 1.25, fifo: 2.5}}
      paper_source: "nowhere, Fig. 0"
    - id: comm
      text: "Gandiva's communication rises with racks"
      metric: comm_latency_mean_s
      trend: increasing
      over: racks
      policies: [gandiva]
"""


def _run(tmp: Path, text: str, name: str) -> Path:
    spec_path = tmp / f"{name}.yaml"
    spec_path.write_text(text)
    out = tmp / name
    report = run_sweep(load_sweep_spec(spec_path), out, n_jobs=1, progress=False, plots=False, use_cache=False)
    assert not report.failed
    return out


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> Path:
    return _run(tmp_path_factory.mktemp("report"), SPEC, "rep")


def _report(results: Path, *extra: str) -> Path:
    out = results / "report"
    done = subprocess.run([sys.executable, "-m", "artist.cli", "report", str(results),
                           "--out", str(out), *extra], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return out


def _tables(markdown: str) -> list[tuple[str, list[str], list[list[str]]]]:
    """(the heading above, headers, rows) of every markdown table."""
    out, heading, lines = [], "", markdown.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("#"):
            heading = lines[i]
        if lines[i].startswith("| ") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            headers = [c.strip() for c in lines[i].strip("|").split(" | ")]
            rows, i = [], i + 2
            while i < len(lines) and lines[i].startswith("| "):
                rows.append([c.strip() for c in lines[i].strip().strip("|").split(" | ")])
                i += 1
            out.append((heading, headers, rows))
            continue
        i += 1
    return out


def _is_number(cell: str) -> bool:
    try:
        float(cell)
        return True
    except ValueError:
        return False


def test_every_number_in_the_tables_comes_from_the_results(swept):
    results = pd.read_csv(swept / "results.csv")
    markdown = (_report(swept) / "report.md").read_text()
    metric_of = {"jct": ("jct_mean_s", HOUR), "comm": ("comm_latency_mean_s", 1.0)}
    checked = 0
    for heading, headers, rows in _tables(markdown):
        for row in rows:
            for col, cell in enumerate(row):
                if not _is_number(cell):
                    continue
                header = headers[col]
                if heading.startswith("### All policies"):  # policy @ racks per row, network per column
                    metric = re.search(r"`(\w+)`", heading).group(1)
                    policy, racks = re.fullmatch(r"([\w-]+) @ racks=(\d+)", row[0]).groups()
                    sub = results[(results.backend == header.split("=")[1]) & (results.policy == policy)
                                  & (results.racks == int(racks))]
                    assert len(sub) == 2 and float(cell) == pytest.approx(sub[metric].mean() * HOUR, rel=5e-4)
                elif header.startswith("paper"):  # the spec's figures, copied
                    assert float(cell) == {"tiresias": 1.25, "fifo": 2.5}[row[0]]
                elif heading.startswith("### Headline"):  # policy per row, racks per column, primary network
                    racks = int(re.search(r"racks=(\d+)", header).group(1))
                    sub = results[(results.backend == "analytical") & (results.policy == row[0])
                                  & (results.racks == racks)]
                    assert float(cell) == pytest.approx(sub.jct_mean_s.mean() * HOUR, rel=5e-4)
                else:  # ablation: network per row, policy @ racks per column
                    metric, scale = metric_of[re.search(r"#### (\w+):", heading).group(1)]
                    policy, racks = re.fullmatch(r"(\w+) @ racks=(\d+)", header).groups()
                    backend = row[0].split("=")[1]
                    sub = results[(results.backend == backend) & (results.policy == policy)
                                  & (results.racks == int(racks))]
                    assert len(sub) == 2  # both seeds
                    assert float(cell) == pytest.approx(sub[metric].mean() * scale, rel=5e-4, abs=1e-12)
                checked += 1
    # headline: paper, ArtISt at 2 rack counts; all policies (2 metrics x 2 networks x 3 policies x 2 racks);
    # jct ablation; comm ablation
    assert checked == 2 + 4 + 24 + 8 + 4


def test_verdicts_follow_the_results(swept):
    results = pd.read_csv(swept / "results.csv")
    markdown = (_report(swept) / "report.md").read_text()
    claims = next(rows for heading, _, rows in _tables(markdown) if "Claims" in heading)
    for backend, col in (("analytical", 1), ("none", 2)):
        means = results[results.backend == backend].groupby(["policy", "racks"]).mean(numeric_only=True)
        held = all(means.loc[("tiresias", r), "jct_mean_s"] < means.loc[("fifo", r), "jct_mean_s"] for r in (1, 2))
        assert claims[0][col] == (HELD if held else NOT_HELD)
        rises = means.loc[("gandiva", 2), "comm_latency_mean_s"] > means.loc[("gandiva", 1), "comm_latency_mean_s"]
        assert claims[1][col] == (HELD if rises else NOT_HELD)
    assert claims[1][2] == NOT_HELD  # backend none: communication is 0 at every rack count, nothing rises


def test_report_is_deterministic_and_html_self_contained(swept, tmp_path):
    first = _report(swept, "--html")
    md, png = (first / "report.md").read_bytes(), (first / "figures/test-paper-jct.png").read_bytes()
    html = (first / "report.html").read_text()
    assert "data:image/png;base64," in html and "<table>" in html and "src='figures" not in html
    again = _report(swept, "--html")
    assert (again / "report.md").read_bytes() == md and (again / "figures/test-paper-jct.png").read_bytes() == png


def test_judge_by_hand():
    order = Claim("o", "a < b < c", "m", ("a", "b", "c"), per="racks")
    means = {("a", 1): 1.0, ("b", 1): 2.0, ("c", 1): 3.0, ("a", 2): 1.0, ("b", 2): 2.0, ("c", 2): 1.5}
    assert judge(order, {k: v for k, v in means.items() if k[1] == 1}, (1,)) == (HELD, "")
    status, detail = judge(order, means, (1, 2))
    assert status == NOT_HELD and "racks=2" in detail and "b 2 >= c 1.5" in detail
    assert judge(order, {("a", 1): 1.0, ("b", 1): 2.0}, (1,))[0] == NA  # c never ran
    trend = Claim("t", "b falls", "m", ("b",), trend="decreasing", over="racks")
    assert judge(trend, {("b", 1): 3.0, ("b", 2): 2.0, ("b", 4): 1.0}, (1, 2, 4)) == (HELD, "")
    assert judge(trend, {("b", 1): 3.0, ("b", 2): 2.0, ("b", 4): 2.0}, (1, 2, 4))[0] == NOT_HELD  # strictly
    assert judge(trend, {("b", 1): 3.0}, (1,))[0] == NA


@pytest.mark.parametrize("change, field", [
    ("order: [tiresias, fifo]", "report.claims[0]"),  # replaced below by an unknown policy
    ("      paper_source: \"nowhere, Fig. 0\"\n", "report.claims[0].paper_source"),
    ("trend: increasing", "report.claims[1].trend"),
])
def test_bad_report_section_is_one_line_naming_the_field(tmp_path, change, field):
    bad = {"order: [tiresias, fifo]": "order: [tiresias, fiffo]", "trend: increasing": "trend: upwards"}
    text = SPEC.replace(change, bad.get(change, ""))
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_sweep_spec(path)
    assert f"field '{field}'" in str(err.value) and str(path) in str(err.value)
    done = subprocess.run([sys.executable, "-m", "artist.cli", "sweep", str(path),
                           "--dry-run"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode != 0 and "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_sweep_without_report_section_gets_its_means(tmp_path):
    text = SPEC.split("report:")[0].replace("racks: [1, 2]", "racks: [1]").replace("seeds: [0, 1]", "seeds: [0]")
    out = _run(tmp_path, text, "plain")
    results = pd.read_csv(out / "results.csv")
    markdown = (_report(out) / "report.md").read_text()
    assert "no report spec" in markdown
    _, headers, rows = next(t for t in _tables(markdown) if "jct_mean_s" in t[0])
    assert [r[0] for r in rows] == ["fifo", "tiresias", "gandiva"]  # one rack count, one workload: plain policies
    for row in rows:
        policy = row[0]
        for network, cell in zip(headers[1:], row[1:]):
            backend = network.split("=")[1]
            sub = results[(results.backend == backend) & (results.policy == policy)]
            assert float(cell) == pytest.approx(sub.jct_mean_s.mean() * HOUR, rel=5e-4)  # in hours


def test_a_report_stamps_each_sweep_and_says_what_the_network_changed(tmp_path):
    import hashlib

    swept = _run(tmp_path, SPEC.split("report:")[0].replace("seeds: [0, 1]", "seeds: [0]"), "rep")
    results = pd.read_csv(swept / "results.csv")
    markdown = (_report(swept) / "report.md").read_text()
    # the stamp: the spec's bytes, the code, the machine, when and at what cost, from what the sweep recorded
    stamp = next(line for line in markdown.splitlines() if "Stamp: " in line)
    sha = hashlib.sha256((swept.parent / "rep.yaml").read_bytes()).hexdigest()[:12]
    assert f"sha256 `{sha}`" in stamp and "code `" in stamp and "cores" in stamp and "CPU " in stamp
    inside_git = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True).returncode == 0
    if inside_git:  # a commit of this checkout (the one the sweep's process saw), marked dirty if edited
        assert re.search(r"code `[0-9a-f]{12}(-dirty)?`", stamp), stamp
    # the JCT with network over the same run without: the results' own ratio, per policy and rack count
    _, headers, rows = next(t for t in _tables(markdown) if "without network" in t[0])
    assert headers[1:] == ["backend=analytical"]
    for row in rows:
        policy, racks = re.fullmatch(r"([\w-]+) @ racks=(\d+)", row[0]).groups()
        mine = results[(results.policy == policy) & (results.racks == int(racks))].set_index(["backend", "seed"])
        ratio = (mine.loc["analytical"].jct_mean_s / mine.loc["none"].jct_mean_s).mean()
        assert float(row[1]) == pytest.approx(ratio, rel=5e-3)
    _, _, shares = next(t for t in _tables(markdown) if "exposed communication" in t[0])
    assert all(row[2] == "0" for row in shares)  # backend none: no communication at all


def test_not_a_results_directory(tmp_path):
    done = subprocess.run([sys.executable, "-m", "artist.cli", "report", str(tmp_path)],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode != 0 and "Traceback" not in done.stderr and str(tmp_path) in done.stderr


def test_normalised_means_and_paper_ranges(tmp_path):
    from artist.report.evaluate import NetworkConfig, claim_means
    from artist.report.render import paper_figure
    from artist.report.spec import parse_report
    from artist.yamlio import Fields

    spec = parse_report(Fields({"paper": "P", "source": "S", "claims": [
        {"id": "rel", "text": "t", "metric": "m", "order": ["a", "b"], "per": "racks", "normalise_to": "a",
         "paper": {"a": 1.0, "b": [1.25, 1.5]}, "paper_source": "Fig. 1"}]}, "spec.yaml", "report."))
    claim = spec.claims[0]
    assert claim.paper == {"a": (1.0,), "b": (1.25, 1.5)} and paper_figure(claim.paper["b"]) == "1.25 - 1.5"
    table = pd.DataFrame({"policy": ["a", "a", "b", "b", "a", "b"], "racks": [2, 2, 2, 2, 4, 4],
                          "m": [10.0, 14.0, 18.0, 18.0, 5.0, 4.0], "backend": "x"})
    means, ats = claim_means(table, claim, {}, NetworkConfig((("backend", "x"),), "x"))
    assert ats == (2, 4)
    assert means == {("a", 2): 1.0, ("b", 2): pytest.approx(18.0 / 12.0), ("a", 4): 1.0, ("b", 4): 0.8}
    assert judge(claim, means, ats)[0] == NOT_HELD  # b is faster than a at 4 racks
    with pytest.raises(InputError, match=r"report.claims\[0\].paper.b"):
        parse_report(Fields({"paper": "P", "source": "S", "claims": [
            {"id": "rel", "text": "t", "metric": "m", "order": ["a", "b"], "paper": {"b": [2, 1]},
             "paper_source": "Fig. 1"}]}, "spec.yaml", "report."))


def test_reduced_version_replaces_fields_and_names_itself(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text(SPEC + "reduced: {racks: [1], seeds: [0], comm: none}\n")
    full, small = load_sweep_spec(path), load_sweep_spec(path, reduced=True)
    assert (full.name, len(full.runs)) == ("rep", 24)
    assert (small.name, len(small.runs)) == ("rep-reduced", 3)  # 1 rack x 3 policies x 1 seed x 1 backend
    assert small.report == full.report
    path.write_text(SPEC + "reduced: {name: other}\n")
    with pytest.raises(InputError, match=r"field 'reduced.name'"):
        load_sweep_spec(path, reduced=True)
    path.write_text(SPEC)
    with pytest.raises(InputError, match=r"field 'reduced'.*no reduced version"):
        load_sweep_spec(path, reduced=True)


def test_an_ablation_sweep_shares_its_papers_section(tmp_path):
    main = tmp_path / "main.yaml"
    main.write_text(SPEC)
    ablation = tmp_path / "ablation.yaml"
    ablation.write_text(SPEC.split("report:")[0].replace("name: rep", "name: rep-flow")
                        .replace("[analytical, none]", "flow").replace("seeds: [0, 1]", "seeds: [0]")
                        + "report: {same_as: main.yaml}\n")
    assert load_sweep_spec(ablation).report == load_sweep_spec(main).report
    ablation.write_text(SPEC.split("report:")[0] + "report: {same_as: missing.yaml}\n")
    with pytest.raises(InputError, match=r"report.same_as.*no such sweep spec"):
        load_sweep_spec(ablation)


# The ablation's other dimensions: calibration (an axis of one sweep) and contention (a second sweep, shared,
# whose smaller workload stands in for the claims' one). stas00-a100-analytical was fitted on dally-3tier's
# machine tier (ring, 8 channels), so 8-GPU jobs on one machine are corrected and rack-spanning ones are not.
CAL_SPEC = f"""
name: cal
topology: {ROOT / 'topologies/dally-3tier.yaml'}
racks: [1, 2]
policies: [fifo, tiresias]
workloads:
  - label: batch-12
    spec: batch:n=12,gpus=8|16,min_iter=1000,max_iter=5000,models=resnet50|vgg11
seeds: [0]
comm: {{backend: analytical, algorithm: ring, channels: 8}}
calibration: [null, {ROOT / 'calibration/profiles/stas00-a100-analytical.yaml'}]
report:
  paper: "Ablation paper"
  source: "made up for the test"
  claims:
    - id: comm
      text: "Tiresias communicates less than FIFO"
      metric: comm_latency_mean_s
      order: [tiresias, fifo]
      per: racks
      where: {{workload: batch-12}}
"""
# named to sort first, with one rack count: the ablation tables still show every rack count any sweep ran
SHARED_SPEC = (CAL_SPEC.replace("name: cal", "name: abl-shared").replace("racks: [1, 2]", "racks: [1]")
               .replace("label: batch-12", "label: batch-6")
               .replace("batch:n=12", "batch:n=6").replace("analytical, algorithm", "flow, algorithm")
               .replace("calibration: [null, ", "# ").split("report:")[0]
               + "simulator: {contention: shared}\nreport: {same_as: cal.yaml, stand_ins: {batch-6: batch-12}}\n")


@pytest.fixture(scope="module")
def ablated(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("ablation")  # specs beside their results: the report reads only the latter
    _run(tmp, CAL_SPEC, "cal")
    _run(tmp, SHARED_SPEC, "abl-shared")
    return tmp


def test_calibration_and_contention_are_ablation_rows_from_the_results(ablated):
    results = {name: pd.read_csv(ablated / name / "results.csv") for name in ("cal", "abl-shared")}
    contention = {"cal": "isolated", "abl-shared": "shared"}  # what each spec asked for
    markdown = (_report(ablated) / "report.md").read_text()
    heading, headers, rows = next(t for t in _tables(markdown) if t[0].startswith("#### comm:"))
    labels = [r[0] for r in rows]
    assert labels == ["backend=flow, calibration=none, contention=shared [batch-6 for batch-12]",
                      "backend=analytical, calibration=none, contention=isolated",
                      "backend=analytical, calibration=stas00-a100-analytical, contention=isolated"]
    checked, by_label = 0, {}
    for row in rows:
        config = dict(kv.split("=") for kv in row[0].split(" [")[0].split(", "))
        name = "abl-shared" if config["contention"] == "shared" else "cal"
        workload = "batch-6" if name == "abl-shared" else "batch-12"
        table = results[name].assign(calibration=results[name].calibration.astype(object).fillna("none"))
        assert contention[name] == config["contention"]
        for header, cell in zip(headers[1:-1], row[1:-1]):
            policy, racks = re.fullmatch(r"(\w+) @ racks=(\d+)", header).groups()
            if name == "abl-shared" and racks == "2":  # a rack count only the other sweep ran
                assert cell == "-"
                continue
            sub = table[(table.backend == config["backend"]) & (table.calibration == config["calibration"])
                        & (table.policy == policy) & (table.racks == int(racks)) & (table.workload == workload)]
            assert len(sub) == 1 and float(cell) == pytest.approx(sub.comm_latency_mean_s.iloc[0], rel=5e-4)
            by_label.setdefault(row[0], []).append(float(cell))
            checked += 1
    assert checked == 2 + 2 * 4  # shared: 2 policies at 1 rack count; 2 configurations x 2 policies x 2 rack counts
    assert by_label[labels[1]] != by_label[labels[2]]  # the calibration moved the numbers: not one row twice
    # which profile, fitted on which log, applied to which topology: from the profile the runs recorded
    from artist.calibration import load_profile

    profile = load_profile(ROOT / "calibration/profiles/stas00-a100-analytical.yaml")
    line = next(x for x in markdown.splitlines() if x.startswith("Calibration `stas00-a100-analytical`"))
    assert f"(id {profile.id})" in line and "fitted on stas00_1node_8xA100_allreduce_columns_trimmed.txt" in line
    assert "applied to dally-3tier (the topology it was fitted on)" in line and "network all_reduce" in line


def test_one_network_configuration_of_two_sweeps_is_never_averaged():
    from artist.report.evaluate import network_configs

    table = pd.DataFrame({"topology": "t", "backend": ["analytical", "analytical", "none"], "policy": "p",
                          "sweep": ["main", "ablation", "ablation"], "m": [1.0, 3.0, 0.5]})
    configs = network_configs(table, {"ablation": {"small": "big"}})
    assert [c.label for c in configs] == ["backend=analytical [sweep main]",
                                          "backend=analytical [sweep ablation] [small for big]",
                                          "backend=none [small for big]"]
    assert [c.rows(table).m.tolist() for c in configs] == [[1.0], [3.0], [0.5]]
    assert configs[1].judged_as({"workload": "big", "racks": 2}) == {"workload": "small", "racks": 2}


@pytest.mark.parametrize("stand_ins, field", [
    ("{batch-6: batch-99}", "report.stand_ins.batch-6"),  # not a workload the claims filter on
    ("{batch-7: batch-12}", "report.stand_ins.batch-7"),  # not a workload of this sweep
])
def test_bad_stand_in_is_one_line_naming_the_field(tmp_path, stand_ins, field):
    (tmp_path / "cal.yaml").write_text(CAL_SPEC)
    path = tmp_path / "abl-shared.yaml"
    path.write_text(SHARED_SPEC.replace("{batch-6: batch-12}", stand_ins))
    with pytest.raises(InputError) as err:
        load_sweep_spec(path)
    assert f"field '{field}'" in str(err.value) and str(path) in str(err.value)


FIGURES = """  figures:
    - id: fifo-jct
      text: "FIFO's mean JCT"
      metric: jct_mean_s
      policy: fifo
      paper: 2.0
      paper_source: "nowhere, Table 0"
      scale: {hour!r}
      unit: h
    - id: gone
      text: "A column the results lack"
      metric: no_such_column
      policy: gandiva
      paper: [1, 3]
      paper_source: "nowhere, Table 0"
""".format(hour=HOUR)


def test_a_papers_other_figures_stand_beside_the_results_means(swept, tmp_path):
    """`report.figures`: the mean over seeds of the metric for the policy in the primary configuration
    (backend analytical), x scale, beside the paper's number or range; a missing column reads '-'."""
    import json
    import shutil

    from artist.report.spec import parse_report
    from artist.yamlio import Fields
    import yaml

    copy = tmp_path / "rep"
    shutil.copytree(swept, copy, ignore=shutil.ignore_patterns("report"))
    section = parse_report(Fields(yaml.safe_load(SPEC + FIGURES)["report"], "spec"))
    (copy / "report-spec.json").write_text(json.dumps(section.to_json()))
    markdown = (_report(copy) / "report.md").read_text()
    (heading, headers, rows), = [t for t in _tables(markdown) if "other figures" in t[0]]
    assert headers[:5] == ["figure", "policy", "metric", "paper", "ArtISt"]
    results = pd.read_csv(swept / "results.csv")
    fifo = results[(results["policy"] == "fifo") & (results["backend"] == "analytical")]["jct_mean_s"]
    assert len(fifo) == 4  # 2 rack counts x 2 seeds: every unpinned axis averaged
    assert rows[0][3] == "2" and rows[0][4] == f"{fifo.mean() * HOUR:.4g}"
    assert rows[1][3] == "1 - 3" and rows[1][4] == "-"


@pytest.mark.parametrize("change, field", [
    ('      paper_source: "nowhere, Table 0"\n      scale', "report.figures[0].paper_source"),
    ("      policy: fifo\n", "report.figures[0]"),
    ("      paper: [1, 3]", "report.figures[1].paper"),
])
def test_a_bad_figure_is_one_line_naming_the_field(tmp_path, change, field):
    bad = {"      policy: fifo\n": "      policy: fiffo\n", "      paper: [1, 3]": "      paper: [3, 1]",
           '      paper_source: "nowhere, Table 0"\n      scale': "      scale"}
    path = tmp_path / "bad.yaml"
    path.write_text((SPEC + FIGURES).replace(change, bad[change]))
    with pytest.raises(InputError) as err:
        load_sweep_spec(path)
    assert f"field '{field}" in str(err.value) and str(path) in str(err.value)
