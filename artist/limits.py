"""Upper bounds on every input number that sizes memory or simulated time.

No input may hang a command or allocate without bound: each limit below is
checked where the value is read, and a value past it is refused with a message
naming the file and field. The limits are generous for research use (far past
any published cluster or trace) and small enough to fail in seconds.
"""

from __future__ import annotations

# GPUs in one topology: 2^20. The largest published training clusters have ~10^5 GPUs
# (Meta's 2 x 24k H100 clusters, 2024; xAI Colossus 100k-200k); the free-GPU map is O(GPUs).
MAX_GPUS = 1 << 20
# Jobs one generator may draw (Helios' four clusters logged 3.36 M jobs in 6 months, Hu et al.
# SC'21; generated workloads are for experiments, traces carry their own size).
MAX_GENERATED_JOBS = 1_000_000
# Arrival times: 10^9 s is ~31.7 years, far past any trace (Helios spans 6 months, Philly 83 days).
MAX_ARRIVAL_S = 1e9
# Optimiser steps of one job: 10^9 (GPT-3 trained for ~93 k steps; long CNN runs ~10^6).
MAX_ITERATIONS = 1_000_000_000
# Periodic scheduling rounds no shorter than 1 s (Pollux/Sia/Gavel use 60-360 s): shorter rounds
# only multiply policy calls.
MIN_ROUND_INTERVAL_S = 1.0
# Checkpoint-restore cost: at most a day.
MAX_RESTORE_S = 86_400.0
# NCCL channels (rings): MAXCHANNELS is 32 in NCCL 2.x's src/include/device.h as read here; 64 leaves
# room for a release that raises it.
MAX_CHANNELS = 64
# Parallel worker processes of one command.
MAX_WORKERS = 1024
# Periodic scheduling rounds of one run, counted from the longest job's compute alone before it starts: 10^7
# (a year of simulated time at 3 s rounds; each round asks the policy, ~10 us to ms).
MAX_ROUNDS = 10_000_000
# Link bandwidth of a tier, in Gb/s: 1 Mb/s .. 1 Pb/s. The fastest link today is NVLink 5, 1.8 TB/s per GPU
# (14.4 Tb/s, NVIDIA Blackwell datasheet); 1 Pb/s is ~70x that. Below 1 Mb/s no datacenter link runs, and a
# step's transfers would take years of simulated time.
MIN_BANDWIDTH_GBPS, MAX_BANDWIDTH_GBPS = 1e-3, 1e6
# Link and switch latency, in us: at most 1 s (a WAN round trip is ~0.1 s; NVLink ~0.1 us).
MAX_LATENCY_US = 1e6
# A GPU type's speed relative to the profiles' reference GPU: 1/1000 .. 1000 (a V100 is ~0.3 of an H100
# on dense FP16; three orders of magnitude either way covers every GPU in use).
MIN_RELATIVE_SPEED, MAX_RELATIVE_SPEED = 1e-3, 1e3
# Oversubscription of a switch level: at most 1000:1 (production fabrics run 1:1 to ~8:1).
MAX_OVERSUBSCRIPTION = 1e3
# One iteration's compute on the reference GPU: at most a day (the largest models' steps take seconds).
MAX_ITERATION_SECONDS = 86_400.0
# Data packets of one ns-3 packet-level run: 5 x 10^8. The engine simulates ~10^5 data packets a second on
# one core (measured here: a 1 GiB all-reduce on 16 GPUs, 1.8 M data packets, ~18 s), so such a run takes
# over an hour, past the 600 s watchdog; it is refused before it starts instead of running into it.
MAX_DATA_PACKETS = 500_000_000
# Parameters of one model tensor: at most 10^13 (GPT-4-class models are ~10^12 parameters in all).
MAX_TENSOR_ELEMENTS = 10**13


def strict_int(text: str) -> int:
    """int(text) without Python's digit separators: "1_6" is not 16 in a trace or a parameter (a typo for
    16 or 1,6 must not pass as either). ValueError as int() raises."""
    if "_" in text:
        raise ValueError(f"invalid literal: {text!r}")
    return int(text)


def strict_float(text: str) -> float:
    """float(text) without digit separators, as strict_int."""
    if "_" in text:
        raise ValueError(f"invalid literal: {text!r}")
    return float(text)
