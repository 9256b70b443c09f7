"""Shanghai AI Lab Acme `trace_seren.csv` / `trace_kalos.csv` (InternLM/AcmeTrace README, "Job Trace"):

    Seren: job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time
    Kalos: job_id,user,node_num,gpu_num,cpu_num,mem_per_pod_GB,shared_mem_per_pod,type,state,submit_time,
           start_time,end_time,fail_time,stop_time,duration,queue,gpu_time

Used: job_id, user, gpu_num (0 = CPU-only), state (as Helios: COMPLETED, CANCELLED, FAILED, TIMEOUT,
NODE_FAIL), submit_time (arrival; times carry their zone, e.g. '+08:00'), duration (seconds, end_time -
start_time). Dropped: node_num, cpu_num, mem_per_pod_GB, shared_mem_per_pod (placement and memory, which
the simulator decides), type (the LLM-development stage: Pretrain, SFT, Eval, ...; ArtISt's profiles are
not LLMs, so it does not pick the model), start_time, end_time, fail_time, stop_time, queue (the original
schedule) and gpu_time (= duration x gpu_num, recomputed). The traces have no virtual clusters (vc '').
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from artist.workload.traces.helios import slurm_record
from artist.workload.traces.options import read_csv_table
from artist.workload.traces.record import LoadReport, TraceRecord

SEREN_COLUMNS = ("job_id", "user", "node_num", "gpu_num", "cpu_num", "type", "state", "submit_time",
                 "start_time", "end_time", "duration", "queue", "gpu_time")
KALOS_COLUMNS = ("job_id", "user", "node_num", "gpu_num", "cpu_num", "mem_per_pod_GB", "shared_mem_per_pod",
                 "type", "state", "submit_time", "start_time", "end_time", "fail_time", "stop_time", "duration",
                 "queue", "gpu_time")
FIELDS_USED = ("job_id", "user", "gpu_num", "state", "submit_time", "duration")
FIELDS_DROPPED = ("node_num", "cpu_num", "mem_per_pod_GB", "shared_mem_per_pod", "type", "start_time", "end_time",
                  "fail_time", "stop_time", "queue", "gpu_time")


def read_acme(path: str | Path, report: LoadReport, skip_bad: bool = False) -> Iterator[TraceRecord]:
    return read_csv_table(Path(path), FIELDS_USED, "Acme", slurm_record, report, skip_bad)
