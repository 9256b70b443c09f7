"""`artist list policies` lists every policy with the kinds of jobs it schedules; `artist simulate` refuses an
unknown one in one line (tests/test_every_policy.py runs every listed one)."""

from artist.cli import main


def test_every_loops_policies_are_listed_with_their_loops(capsys):
    from artist.crius.simulation import POLICIES as CRIUS_POLICIES
    from artist.policies.pollux.registry import ELASTIC_POLICIES
    from artist.policies.registry import builtin_policy_names

    assert main(["list", "policies"]) == 0
    rows = {line.split()[0]: line.split()[1] for line in capsys.readouterr().out.splitlines()}
    expected = set(builtin_policy_names()) | set(ELASTIC_POLICIES) | set(CRIUS_POLICIES)
    assert expected <= set(rows)
    # 15 algorithms of the four papers and their baselines, by name (some names in several loops)
    assert {"fifo", "gandiva", "tiresias", "dally", "dally-manual", "dally-nowait", "dally-fullyconsolidated",
            "pollux", "sia", "gavel", "optimus-oracle", "tiresias-pollux", "crius", "fcfs", "elasticflow-ls",
            "gandiva-crius"} <= set(rows)
    assert rows["pollux"] == "elastic" and rows["fcfs"] == rows["gandiva-crius"] == "elastic+crius"
    # one name, one algorithm: the exact loop's Gandiva and Tiresias run the elastic loop's rigid jobs too; the
    # papers' other readings of them have names of their own
    assert rows["gandiva"] == rows["tiresias"] == "rigid+elastic" and rows["tiresias-pollux"] == "elastic"


def test_simulate_refuses_an_unknown_policy_in_one_line(capsys):
    assert main(["simulate", "--policy", "no-such-policy", "--quiet"]) == 2
    assert "unknown policy 'no-such-policy'" in capsys.readouterr().err
