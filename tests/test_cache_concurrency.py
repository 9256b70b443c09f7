"""The cache under several processes: concurrent writers, in-flight de-duplication, SIGKILL mid-write.

Workers are separate Python processes running this file as a script (see the bottom), so
that they share nothing but the SQLite file. Every simulation a fake backend runs appends a
line to a log file (O_APPEND: one small write is atomic), which is how we count them.
"""

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if __name__ == "__main__":
    sys.path.insert(0, str(REPO))

from artist.network.base import CommResult, time_node_by_node  # noqa: E402
from artist.network.cache import Cached, LatencyStore  # noqa: E402
from artist.perf.compute import ComputeModel  # noqa: E402
from artist.perf.model import PerfModel  # noqa: E402
from artist.placement import Placement, placement_from_shape, shape_to_text  # noqa: E402
from artist.topology import load_topology  # noqa: E402
from artist.workload import ModelProfile  # noqa: E402

SHAPES = ([[8]], [[4, 4]], [[4], [4]], [[2, 2], [2, 2]], [[8, 8]], [[1] * 8])
MODELS = tuple(ModelProfile(f"m{i}", (10_000_000 * (i + 1),), 0.05 * (i + 1), "A100") for i in range(2))  # 1 bucket


class FormulaInner:
    """A fake backend answering by formula, so that every reader can check what it was served."""

    name = "logging-fake"

    def __init__(self, topology):
        self.topology = topology

    def identity(self):
        return {"backend": self.name, "version": "1"}

    def collective_seconds(self, group, nbytes, kind="all_reduce"):
        """A formula of the group's GPUs, machines, racks and the bytes: every shape its own answer."""
        return 1e-3 * group.size + 1e-4 * len(group.machines) + 1e-5 * len(group.racks) + 1e-13 * nbytes

    def time(self, graphs):
        def seconds_of(node):
            return self.collective_seconds(Placement(self.topology, node.group), node.nbytes, node.kind)

        return {job: time_node_by_node(graph, seconds_of, CommResult(self.name, details={"pid": os.getpid()}))
                for job, graph in graphs.items()}


class LoggingInner(FormulaInner):
    """Appends one line per graph it times: pid, the graph's bytes on the fabric (which model), its shape."""

    def __init__(self, topology, log_path: str, sleep_s: float):
        super().__init__(topology)
        self.log_path = log_path
        self.sleep_s = sleep_s

    def time(self, graphs):
        fd = os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            for graph in graphs.values():
                nbytes = sum(n.nbytes for n in graph.communication())
                shape = shape_to_text(Placement(self.topology, graph.gpus).canonical_shape)
                os.write(fd, f"{os.getpid()} {nbytes} {shape}\n".encode())
        finally:
            os.close(fd)
        time.sleep(self.sleep_s)  # widen the window in which other workers ask for the same key
        return super().time(graphs)


def ask(fabric, topo, model: ModelProfile, shape):
    """One DDP step of `model` alone on `shape`, as a policy asks it (a fresh PerfModel: no memo of its own)."""
    return PerfModel(fabric, ComputeModel(topo)).estimate(model, placement_from_shape(topo, shape))


def expected_exposed(topo, model: ModelProfile, shape) -> float:
    """The exposed communication the fake backend's formula gives, asked without any cache."""
    return ask(FormulaInner(topo), topo, model, shape).exposed_comm_seconds


class PausingStore(LatencyStore):
    """Writes its entry rows, then announces it and sleeps inside the still-open transaction."""

    def _write_entry(self, conn, row):
        super()._write_entry(conn, row)
        print("IN_TRANSACTION", flush=True)
        time.sleep(600)


def _wait_for(path: Path, timeout_s: float = 60.0):
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} never appeared")
        time.sleep(0.005)


# --------------------------------------------------------------------------- worker entry points


def worker_hammer(store_path, log_path, go_path, seed):
    topo = load_topology(REPO / "topologies" / "dally-3tier.yaml")
    cached = Cached(LoggingInner(topo, log_path, sleep_s=0.05), LatencyStore(store_path))
    tasks = [(m, s) for m in MODELS for s in SHAPES] * 3
    random.Random(seed).shuffle(tasks)
    _wait_for(Path(go_path))
    for model, shape in tasks:
        r = ask(cached, topo, model, shape)
        print(json.dumps([model.name, shape_to_text(shape), r.exposed_comm_seconds, r.comm.cache_hit]), flush=True)
    cached.close()


class GatedInner(LoggingInner):
    """Announces that it holds the claim, then simulates only once the gate file exists."""

    def __init__(self, topology, log_path, gate_path):
        super().__init__(topology, log_path, 0.0)
        self.gate_path = Path(gate_path)

    def time(self, graphs):
        print("SIMULATING", flush=True)
        _wait_for(self.gate_path, timeout_s=120)
        return super().time(graphs)


class AnnouncingStore(LatencyStore):
    """Says when it polls for a claim's holder: only an asker that is waiting does."""

    def claim_holder(self, key):
        if not getattr(self, "_announced", False):
            print("WAITING", flush=True)
            self._announced = True
        return super().claim_holder(key)


def worker_single(store_path, log_path, gate_path):
    """Asks for one key; prints whether it simulated it or waited for someone else."""
    topo = load_topology(REPO / "topologies" / "dally-3tier.yaml")
    cached = Cached(GatedInner(topo, log_path, gate_path), AnnouncingStore(store_path))
    r = ask(cached, topo, MODELS[1], [[8, 8]])
    print(json.dumps({"hit": r.comm.cache_hit, "waits": cached.session.waits, "exposed": r.exposed_comm_seconds}),
          flush=True)


def worker_pause(store_path, log_path):
    topo = load_topology(REPO / "topologies" / "dally-3tier.yaml")
    first = Cached(LoggingInner(topo, log_path, 0.0), LatencyStore(store_path))
    ask(first, topo, MODELS[0], SHAPES[0])  # committed normally
    first.close()
    ask(Cached(LoggingInner(topo, log_path, 0.0), PausingStore(store_path)), topo, MODELS[0], SHAPES[1])


def stream_model(i: int) -> ModelProfile:
    return ModelProfile(f"s{i}", (1_000_000 + i,), 0.001 * (1 + i), "A100")


def worker_stream(store_path, log_path, start):
    """Writes new keys as fast as it can until killed."""
    topo = load_topology(REPO / "topologies" / "dally-3tier.yaml")
    cached = Cached(LoggingInner(topo, log_path, 0.0), LatencyStore(store_path))
    for i in range(int(start), int(start) + 1_000_000):
        ask(cached, topo, stream_model(i), [[4], [4]])
        if i == int(start):
            print("STARTED", flush=True)


def _spawn(*args):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, __file__, *map(str, args)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _log_lines(log_path: Path) -> list[str]:
    return log_path.read_text().splitlines() if log_path.exists() else []


def _integrity(store_path: Path) -> str:
    conn = sqlite3.connect(store_path)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


# --------------------------------------------------------------------------- tests


def test_four_writers_on_overlapping_keys_simulate_each_key_once(tmp_path):
    store_path, log_path, go = tmp_path / "c.sqlite", tmp_path / "sims.log", tmp_path / "go"
    workers = [_spawn("hammer", store_path, log_path, go, seed) for seed in range(4)]
    time.sleep(0.5)  # let them start importing; the go file makes them ask at the same moment
    go.touch()
    outputs = []
    for w in workers:
        out, err = w.communicate(timeout=300)
        assert w.returncode == 0, err
        outputs.append([json.loads(line) for line in out.splitlines()])

    keys = {(str(m.total_bytes), shape_to_text(s)) for m in MODELS for s in SHAPES}
    simulated = Counter(tuple(line.split()[1:]) for line in _log_lines(log_path))
    assert set(simulated) == keys
    assert max(simulated.values()) == 1, f"simulated more than once: {simulated}"

    # Every worker saw the value the formula gives, whoever computed it, to the last bit.
    topo = load_topology(REPO / "topologies" / "dally-3tier.yaml")
    want = {(m.name, shape_to_text(s)): expected_exposed(topo, m, s) for m in MODELS for s in SHAPES}
    assert len(set(want.values())) == len(want)  # every key has its own answer: a mix-up would show
    for out in outputs:
        assert len(out) == 3 * len(keys)
        for name, shape_text, exposed, _ in out:
            assert exposed == want[(name, shape_text)]
    # Hits + misses = lookups; misses = simulations.
    misses = sum(1 for out in outputs for *_, hit in out if not hit)
    assert misses == len(keys)

    assert _integrity(store_path) == "ok"
    stats = LatencyStore(store_path).stats()
    assert (stats["entries"], stats["inflight_claims"]) == (len(keys), 0)
    assert (stats["misses"], stats["hits"]) == (len(keys), 4 * 3 * len(keys) - len(keys))


def test_an_asker_waits_for_the_key_another_process_is_simulating(tmp_path):
    store_path, log_path = tmp_path / "c.sqlite", tmp_path / "sims.log"
    gate = tmp_path / "gate"
    owner = _spawn("single", store_path, log_path, gate)
    assert owner.stdout.readline().strip() == "SIMULATING", owner.stderr.read()  # it holds the claim now
    asker = _spawn("single", store_path, log_path, gate)
    assert asker.stdout.readline().strip() == "WAITING", asker.stderr.read()  # it found the live claim
    gate.touch()  # let the owner finish
    asker_out, asker_err = asker.communicate(timeout=120)
    owner_out, _ = owner.communicate(timeout=120)
    assert asker.returncode == 0 and owner.returncode == 0, asker_err
    assert "SIMULATING" not in asker_out
    asker_result, owner_result = json.loads(asker_out.splitlines()[-1]), json.loads(owner_out.splitlines()[-1])
    assert asker_result == {"hit": True, "waits": 1, "exposed": owner_result["exposed"]}
    assert owner_result["hit"] is False
    assert len(_log_lines(log_path)) == 1


def test_writer_killed_inside_its_transaction_leaves_a_readable_store_without_half_entries(tmp_path):
    store_path, log_path = tmp_path / "c.sqlite", tmp_path / "sims.log"
    w = _spawn("pause", store_path, log_path)
    line = w.stdout.readline()
    assert line.strip() == "IN_TRANSACTION", w.stderr.read()
    os.kill(w.pid, signal.SIGKILL)
    w.wait(timeout=30)
    assert w.returncode == -signal.SIGKILL

    assert _integrity(store_path) == "ok"
    conn = sqlite3.connect(store_path)
    shapes = [r[0] for r in conn.execute("SELECT shape FROM entries")]
    assert shapes == ["[[8]]"]  # the committed entry only; the killed one is absent, not half there
    conn.close()

    # The dead writer's claim does not block anyone: the next asker simulates the key once.
    topo = load_topology(REPO / "topologies" / "dally-3tier.yaml")
    cached = Cached(LoggingInner(topo, str(log_path), 0.0), LatencyStore(store_path))
    before = len(_log_lines(log_path))
    r = ask(cached, topo, MODELS[0], SHAPES[1])
    assert not r.comm.cache_hit and len(_log_lines(log_path)) == before + 1
    assert ask(cached, topo, MODELS[0], SHAPES[0]).comm.cache_hit
    assert LatencyStore(store_path).stats()["inflight_claims"] == 0


def test_writers_killed_at_random_moments_leave_only_whole_correct_entries(tmp_path):
    store_path, log_path = tmp_path / "c.sqlite", tmp_path / "sims.log"
    topo = load_topology(REPO / "topologies" / "dally-3tier.yaml")
    rng = random.Random(7)
    start = 0
    for _ in range(3):
        w = _spawn("stream", store_path, log_path, start)
        assert w.stdout.readline().strip() == "STARTED", w.stderr.read()
        time.sleep(rng.uniform(0.05, 0.4))
        os.kill(w.pid, signal.SIGKILL)
        w.wait(timeout=30)
        assert _integrity(store_path) == "ok"
        start += 100_000  # the next writer asks for new keys
    conn = sqlite3.connect(store_path)
    rows = conn.execute("SELECT key_json, exposed_seconds, result_json FROM entries").fetchall()
    assert len(rows) >= 3
    formula = FormulaInner(topo)
    for key_json, exposed, result_json in rows:
        (graph,) = json.loads(key_json)["graphs"]  # nodes as [kind, deps, seconds, group, nbytes]
        i = graph[-1][4] - 1_000_000  # the one bucket's bytes say which model this was
        model = stream_model(i)
        assert exposed == expected_exposed(topo, model, [[4], [4]])
        stored = json.loads(result_json)
        assert stored["exposed_seconds"] == exposed
        step = PerfModel(formula, ComputeModel(topo)).graph(model, placement_from_shape(topo, [[4], [4]]))[0]
        assert stored["node_seconds"] == [list(formula.time({"j": step})["j"].node_seconds)]


if __name__ == "__main__":
    mode, *rest = sys.argv[1:]
    {"hammer": worker_hammer, "single": worker_single, "pause": worker_pause, "stream": worker_stream}[mode](*rest)


def test_a_claim_of_another_host_is_stale_when_old_or_dated_in_the_future(tmp_path):
    """Another host's owner cannot be asked if it lives: only the claim's age tells. A claim dated hours ahead
    (a wrong clock) never aged, so askers of its key waited for ever."""
    store = LatencyStore(tmp_path / "cache.sqlite")
    for claimed_in_s, stale in ((-7200, True), (3 * 3600, True), (60, False), (-60, False)):
        holder = ("another-host.example", 4242, "0", time.time() + claimed_in_s)
        assert store._is_stale(holder) is stale, claimed_in_s
