"""Dally and its variants: priority P, delay timers, auto-tuner, network-sensitive preemption.

Cluster: 2 racks x 2 machines x 4 GPUs (GPU g on machine g // 4, machine m in rack m // 2).
Running jobs built by policy_views.running progress at 1 / iteration_seconds iterations per
second with 0.1 s of compute per iteration, so their P is 0.1 / iteration_seconds.
"""

import math
import random
import statistics

import pytest

from artist.cluster import FreeMap
from artist.network.analytical import AnalyticalModel
from artist.placement import MACHINE, NETWORK, RACK, Placement
from artist.policies.dally import AutoTuner, network_priority
from artist.policies.preemption import best_tier_for_size
from artist.policies.registry import make_policy
from artist.simulator import SimulatorConfig, simulate
from artist.workload import JobMix, poisson_jobs

from conftest import make_topology
from policy_views import EXPOSED, LOW_SKEW, fill, loaded_outcomes, running, view, waiting


@pytest.fixture
def topo():
    return make_topology()


# ---- priority ----------------------------------------------------------------


def test_priority_is_progress_over_relative_running_time(topo):
    # 1000 iterations of 0.1 s: ideal 100 s. After 50 s holding GPUs and 250 iterations:
    # W = 0.25, R = 0.5, P = 0.5.
    s = waiting("j", 2, 60.0, iterations=1000, ran_seconds=50.0, done=250.0)
    assert network_priority(s, 70.0) == pytest.approx(0.5, rel=1e-12)
    # Running at twice the ideal iteration time since t = 0: P = 0.5 at any time.
    r = running("r", (0, 1), topo, 0.0, 0.2, iterations=1000)
    assert network_priority(r, 40.0) == pytest.approx(0.5, rel=1e-12)
    assert network_priority(waiting("new", 2, 0.0), 10.0) == 0.0  # never ran


def test_offers_go_in_increasing_priority(topo):
    # One machine free (GPUs 0-3); three 4-GPU jobs want it. New jobs have P = 0 and come first
    # (ties by arrival); the job that ran at P = 0.5 comes after them.
    busy = [fill(topo, tuple(range(4, 16)), iteration_seconds=1.0)]  # P = 0.1: no one may preempt it
    ran = waiting("ran", 4, 0.0, arrival=0.0, iterations=1000, ran_seconds=50.0, done=250.0)
    late, early = waiting("late", 4, 5.0), waiting("early", 4, 3.0)
    decision = make_policy("dally-nowait").schedule(view(topo, 10.0, [ran, late, early], busy))
    assert decision.allocations["early"].gpus == (0, 1, 2, 3)
    assert set(decision.allocations) == {"filler", "early"}


# ---- delay timers ------------------------------------------------------------


def _slowed_cluster(topo, free_machines_gpus):
    """Running jobs at P = 0.5 on every GPU not listed as free (so a P = 1 job cannot preempt them)."""
    free = set(free_machines_gpus)
    return [fill(topo, (g,), f"f{g:02d}", iteration_seconds=0.2) for g in range(16) if g not in free]


def _patient_job(since=0.0):
    # Ran 100 s at ideal speed: P = 1, above every running job, so it never preempts.
    return waiting("j", 4, since, arrival=0.0, iterations=100_000, ran_seconds=100.0, done=1000.0)


def test_manual_timers_expire_at_the_right_times(topo):
    policy = make_policy("dally-manual", machine_timer_s=100.0, rack_timer_s=200.0)
    rack_only = _slowed_cluster(topo, (0, 1, 4, 5))  # 4 free GPUs, two machines, one rack
    j = _patient_job()
    d = policy.schedule(view(topo, 50.0, [j], rack_only))
    assert "j" not in d.allocations and d.wake_at == 100.0  # machine timer expires at 0 + 100
    d = policy.schedule(view(topo, 100.0, [j], rack_only))
    assert d.allocations["j"].gpus == (0, 1, 4, 5) and d.allocations["j"].tier == RACK
    spread = _slowed_cluster(topo, (0, 1, 8, 9))  # 4 free GPUs across the two racks
    d = policy.schedule(view(topo, 150.0, [j], spread))
    assert "j" not in d.allocations and d.wake_at == 300.0  # rack timer runs after the machine one
    d = policy.schedule(view(topo, 299.0, [j], spread))
    assert "j" not in d.allocations
    d = policy.schedule(view(topo, 300.0, [j], spread))
    assert d.allocations["j"].tier == NETWORK


def test_size_rules_zero_the_timers(topo):
    policy = make_policy("dally-manual", machine_timer_s=100.0, rack_timer_s=200.0)
    # 8 GPUs cannot fit a 4-GPU machine: machine timer 0, so it takes a rack offer at once.
    big = waiting("big", 8, 0.0, arrival=0.0, iterations=100_000, ran_seconds=100.0, done=1000.0)
    d = policy.schedule(view(topo, 0.0, [big], _slowed_cluster(topo, tuple(range(8)))))
    assert d.allocations["big"].tier == RACK
    # 12 GPUs cannot fit an 8-GPU rack: both timers 0, it takes a network offer at once.
    huge = waiting("huge", 12, 0.0, arrival=0.0, iterations=100_000, ran_seconds=100.0, done=1000.0)
    d = policy.schedule(view(topo, 0.0, [huge], _slowed_cluster(topo, tuple(range(12)))))
    assert d.allocations["huge"].tier == NETWORK


def test_nowait_takes_any_offer_at_once(topo):
    d = make_policy("dally-nowait").schedule(view(topo, 0.0, [_patient_job()], _slowed_cluster(topo, (0, 1, 8, 9))))
    assert d.allocations["j"].tier == NETWORK and d.wake_at is None


def test_fully_consolidated_never_accepts_a_worse_tier(topo):
    policy = make_policy("dally-fullyconsolidated")
    for now in (0.0, 1e5, 1e9):
        d = policy.schedule(view(topo, now, [_patient_job()], _slowed_cluster(topo, (0, 1, 4, 5))))
        assert "j" not in d.allocations and d.wake_at is None  # no timer will ever expire
    d = policy.schedule(view(topo, 1e9, [_patient_job()], _slowed_cluster(topo, (8, 9, 10, 11))))
    assert d.allocations["j"].gpus == (8, 9, 10, 11)


# ---- auto-tuner --------------------------------------------------------------


def test_auto_tuner_is_mean_plus_two_sample_std_of_retained_waits():
    tuner = AutoTuner(history_s=100.0)
    for t, w in [(0.0, 50.0), (10.0, 10.0), (20.0, 20.0), (30.0, 30.0)]:
        tuner.record(t, MACHINE, 4, w)
    tuner.record(30.0, RACK, 4, 1000.0)  # another list
    tuner.record(30.0, MACHINE, 2, 1000.0)  # another demand
    # At t = 105 the t = 0 entry is 105 s old (> 100 s): dropped; 10, 20, 30 remain:
    # mean 20, sample standard deviation 10 -> 20 + 2 x 10 = 40.
    assert tuner.waits(105.0, MACHINE, 4) == [10.0, 20.0, 30.0]
    assert tuner.timer(105.0, MACHINE, 4) == pytest.approx(40.0, rel=1e-12)
    assert tuner.timer(105.0, RACK, 4) == 1000.0  # one entry: that wait
    assert tuner.timer(105.0, NETWORK, 4) == 0.0  # none: no waiting
    # At t = 115 the t = 10 entry is 105 s old: dropped; 20 and 30 remain.
    assert tuner.timer(115.0, MACHINE, 4) == pytest.approx(25.0 + 2 * statistics.stdev([20.0, 30.0]), rel=1e-12)


def test_auto_tuner_timer_is_bit_identical_to_the_statistics_module():
    # The tuner keeps exact running sums instead of calling statistics on the whole list: its
    # timers must still be statistics.fmean + 2 x statistics.stdev to the last bit, as entries
    # come and go (wake-up times and offers depend on them).
    rng = random.Random(12)
    for trial in range(300):
        tuner = AutoTuner(history_s=50.0)
        now, kept = 0.0, []
        for _ in range(rng.randint(2, 60)):
            now += rng.expovariate(0.2)
            wait = rng.choice([rng.expovariate(1 / 3000), rng.uniform(0, 1e-3), float(rng.randint(0, 9)),
                               1e5 + rng.random() * 1e-6, 0.0])
            tuner.record(now, MACHINE, 8, wait)
            kept = [(t, w) for t, w in kept + [(now, wait)] if now - t <= 50.0]
            waits = [w for _, w in kept]
            expected = (0.0 if not waits else waits[0] if len(waits) == 1
                        else statistics.fmean(waits) + 2.0 * statistics.stdev(waits))
            assert repr(tuner.timer(now, MACHINE, 8)) == repr(expected), (trial, waits)
    # A wait that is not a float is left to the statistics module itself.
    tuner = AutoTuner()
    for t, w in [(0.0, 3), (1.0, 4.5), (2.0, 10)]:
        tuner.record(t, RACK, 2, w)
    assert tuner.timer(2.0, RACK, 2) == statistics.fmean([3, 4.5, 10]) + 2.0 * statistics.stdev([3, 4.5, 10])


def test_auto_tuned_dally_records_accepted_waits(topo):
    policy = make_policy("dally")
    busy = _slowed_cluster(topo, (0, 1, 2, 3, 8, 9))
    a, b = waiting("a", 4, 3.0), waiting("b", 2, 7.0)
    policy.schedule(view(topo, 10.0, [a, b], busy))
    assert policy.tuner.waits(10.0, MACHINE, 4) == [7.0]  # a waited 10 - 3 s for its machine
    assert policy.tuner.waits(10.0, MACHINE, 2) == [3.0]
    # The tuned machine timer for 4-GPU jobs is now 7 s: a job that waited 2 s rejects a rack offer...
    c = waiting("c", 4, 10.0, arrival=0.0, iterations=100_000, ran_seconds=100.0, done=1000.0)
    d = policy.schedule(view(topo, 12.0, [c], _slowed_cluster(topo, (0, 1, 4, 5))))
    assert "c" not in d.allocations and d.wake_at == pytest.approx(17.0)
    # ...and takes it once 7 s have passed.
    assert policy.schedule(view(topo, 17.0, [c], _slowed_cluster(topo, (0, 1, 4, 5)))).allocations["c"].tier == RACK


# ---- preemption --------------------------------------------------------------


def test_low_priority_job_preempts_the_highest_priority_runner_for_a_machine(topo):
    # Free: GPUs 0,1 and 4,5 (a rack offer). Machine 2 holds a job at P = 1 (little slowdown),
    # machine 3 one at P = 0.2. The waiting job (P = 0.25) takes machine 2; the P = 0.2 job stays.
    # The preempted job is offered the rack slot in the same round: no-wait takes it; the others
    # reject it: manual and fully-consolidated by their timers, auto-tuned Dally because j's
    # accepted 10 s wait has just made the 4-GPU machine timer 10 s.
    fast = running("fast", (8, 9, 10, 11), topo, 0.0, 0.1)
    slow = running("slow", (12, 13, 14, 15), topo, 0.0, 0.5)
    others = [fill(topo, (2, 3), "f1", iteration_seconds=0.5), fill(topo, (6, 7), "f2", iteration_seconds=0.5)]
    j = waiting("j", 4, 0.0, arrival=0.0, iterations=1000, ran_seconds=40.0, done=100.0)  # P = 0.25
    fast_goes_to = {"dally": None, "dally-nowait": (0, 1, 4, 5), "dally-manual": None,
                    "dally-fullyconsolidated": None}
    for name, expected in fast_goes_to.items():
        d = make_policy(name).schedule(view(topo, 10.0, [j], [fast, slow, *others]))
        assert d.allocations["j"].gpus == (8, 9, 10, 11), name
        assert d.allocations["slow"].gpus == (12, 13, 14, 15), name
        got = d.allocations.get("fast")
        assert (got.gpus if got else None) == expected, name


def test_preempted_job_is_reoffered_in_the_same_round(topo):
    # A 2-GPU runner at P = 1 holds half of machine 0, the other half is free, machines 2-3 are busy
    # with slowed jobs, machine 1 is free. The new 4-GPU job (P = 0) gets machine 1 without
    # preempting anyone: machine 1 is a machine-tier offer already.
    runner = running("r", (0, 1), topo, 0.0, 0.1)
    busy = [fill(topo, tuple(range(8, 16)), iteration_seconds=0.5)]
    d = make_policy("dally-nowait").schedule(view(topo, 10.0, [waiting("w", 4, 10.0)], [runner, *busy]))
    assert d.allocations["w"].gpus == (4, 5, 6, 7) and d.allocations["r"].gpus == (0, 1)
    # Now machine 1 is busy too and the only free GPUs are 2,3 and 6,7 (a rack offer): the new job
    # preempts r (P = 1 > 0) to get machine 0; r goes back to the queue and, offered the rest in the
    # same round, takes GPUs 6,7 (a machine-tier placement for 2 GPUs).
    m1 = fill(topo, (4, 5), "m1", iteration_seconds=0.5)
    d = make_policy("dally-nowait").schedule(view(topo, 10.0, [waiting("w", 4, 10.0)], [runner, m1, *busy]))
    assert d.allocations["w"].gpus == (0, 1, 2, 3)
    assert d.allocations["r"].gpus == (6, 7)


def test_no_preemption_without_an_offer(topo):
    # Only 2 GPUs free for a 4-GPU job: preemption would only buy capacity, not consolidation.
    runner = running("r", (0, 1, 2, 3), topo, 0.0, 0.1)
    busy = [runner, fill(topo, (4, 5), "f1"), fill(topo, tuple(range(8, 16)), "f2")]
    d = make_policy("dally-nowait").schedule(view(topo, 10.0, [waiting("w", 4, 10.0)], busy))
    assert "w" not in d.allocations and d.allocations["r"] == runner.placement


def test_no_preemption_of_lower_priority_jobs(topo):
    # Everyone running is slower (P = 0.2) than the waiting job (P = 0.25): it waits for its timer.
    busy = _slowed_cluster(topo, (0, 1, 4, 5))
    for s in busy:
        s.iteration_seconds = 0.5
    j = waiting("j", 4, 0.0, arrival=0.0, iterations=1000, ran_seconds=40.0, done=100.0)
    d = make_policy("dally-manual", machine_timer_s=100.0, rack_timer_s=100.0).schedule(view(topo, 10.0, [j], busy))
    assert "j" not in d.allocations and len(d.allocations) == len(busy)


# ---- whole simulations ------------------------------------------------------


def _trace():
    return poisson_jobs(40, JobMix(("spread", "exposed"), gpu_choices=(1, 2, 3, 4, 6, 8),
                                   min_iterations=200, max_iterations=20_000), 15.0, seed=5)


class _Watch:
    """Wraps a policy and checks every decision it makes."""

    def __init__(self, policy, check):
        self.policy, self.check, self.name = policy, check, policy.name

    def schedule(self, v):
        decision = self.policy.schedule(v)
        self.check(v, decision)
        return decision


def _simulate(topo, policy):
    return simulate(topo, _trace(), {"spread": LOW_SKEW, "exposed": EXPOSED}, policy, AnalyticalModel(topo),
                    SimulatorConfig(check_invariants=True))


def test_nowait_never_leaves_a_job_waiting_that_fits(topo):
    def check(v, decision):
        free = FreeMap(topo)
        for p in decision.allocations.values():
            free.take(p.gpus)
        for s in v.waiting:
            if s.job_id not in decision.allocations:
                assert s.gpus > free.total_free, (v.now, s.job_id)

    result = _simulate(topo, _Watch(make_policy("dally-nowait"), check))
    assert all(s.finish is not None for s in result.jobs)


def test_fully_consolidated_only_ever_runs_at_the_best_tier(topo):
    rejected = []  # (time, job) left waiting although enough GPUs were free: a worse offer refused

    def check(v, decision):
        free = FreeMap(topo)
        for p in decision.allocations.values():
            free.take(p.gpus)
        rejected.extend((v.now, s.job_id) for s in v.waiting
                        if s.job_id not in decision.allocations and s.gpus <= free.total_free)

    result = _simulate(topo, _Watch(make_policy("dally-fullyconsolidated"), check))
    records = [(s.gpus, r.tier) for s in result.jobs for r in s.history]
    assert records and all(tier == best_tier_for_size(topo, n) for n, tier in records)
    assert rejected  # the trace did put worse offers in front of it


def test_every_variant_finishes_the_trace_deterministically(topo):
    for name in ("dally", "dally-manual", "dally-nowait", "dally-fullyconsolidated"):
        first = [(s.job_id, s.finish, s.preemptions) for s in _simulate(topo, make_policy(name)).jobs]
        again = [(s.job_id, s.finish, s.preemptions) for s in _simulate(topo, make_policy(name)).jobs]
        assert first == again and all(math.isfinite(f) for _, f, _ in first), name


def test_what_dally_keeps_between_moments_changes_no_decision():
    """Waiting jobs' P and the auto-tuner's timers are kept between moments (valid while the job waits,
    and until an offer is recorded or a wait leaves the history window); a Dally that forgets both
    before every call must decide the same, on a loaded cluster with preemptions and short history."""
    from artist.policies.dally import Dally

    class Forgetful(Dally):
        def schedule(self, view):
            self._waiting_priority.clear()
            self.tuner._cache.clear()
            return super().schedule(view)

    kept, forgotten = loaded_outcomes(Dally(history_s=3600.0), 7), loaded_outcomes(Forgetful(history_s=3600.0), 7)
    assert sum(p for _, _, p, _, _ in forgotten) > 0  # preemptions happen, so the comparison means something
    assert kept == forgotten


def test_counted_preemption_search_matches_the_one_by_one_search():
    """Dally counts, on free GPUs per machine and rack, how many leading candidates reclaim() must release
    (_fits, fewest_leading); on random maps and candidate lists that count and its placement must be
    what releasing them one by one and asking FreeMap.find after each gives."""
    from artist.policies.dally import _fits, _released_prefix
    from artist.policies.preemption import fewest_leading, reclaim
    from conftest import make_topology

    topo = make_topology(racks=3, machines_per_rack=2, gpus_per_machine=4)
    rng = random.Random(11)
    checked = 0
    for _ in range(400):
        owner = {}
        gpus = list(range(topo.gpus))
        rng.shuffle(gpus)
        jobs, free_gpus, i = [], [], 0
        while i < len(gpus):
            size = rng.choice((1, 2, 3, 4, 6))
            held = sorted(gpus[i:i + size])
            i += size
            if rng.random() < 0.25:
                free_gpus.extend(held)
            else:
                jobs.append((f"j{len(jobs)}", Placement(topo, tuple(held))))
                owner.update({g: jobs[-1][0] for g in held})
        free = FreeMap(topo, [[g for g in range(m * 4, m * 4 + 4) if g in free_gpus] for m in range(topo.machines)])
        candidates = jobs[:rng.randint(1, len(jobs))] if jobs else []
        if not candidates:
            continue
        n, tier = rng.choice((2, 3, 4, 5, 8)), rng.choice((MACHINE, RACK))
        released = _released_prefix(None, free, candidates)
        # a shorter prefix's counts taken from the longer one's are the counts made afresh
        k = rng.randint(1, len(candidates))
        shrunk = _released_prefix(released, free, candidates[:k])[1]
        fresh = _released_prefix(None, free, candidates[:k])[1]
        assert (shrunk.free_count, shrunk.rack_free, shrunk.total_free, shrunk.most_free()) == \
            (fresh.free_count, fresh.rack_free, fresh.total_free, fresh.most_free())
        brute = reclaim(free, candidates, lambda fm: fm.find(n, tier))
        assert _fits(released[1], n, tier) == (brute is not None)
        if brute is not None:
            counted = reclaim(free, candidates, lambda fm: fm.find(n, tier),
                              needed=fewest_leading(free, candidates, lambda c: _fits(c, n, tier)))
            assert (counted.placement, counted.victims) == (brute.placement, brute.victims)
            assert counted.free.free_by_machine == brute.free.free_by_machine
            checked += 1
    assert checked > 50
