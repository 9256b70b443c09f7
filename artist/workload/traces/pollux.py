"""Pollux / Sia workload files (petuum/adaptdl branch osdi21-artifact `simulator/workloads/*.csv`;
siasosp23/artifacts `sia-simulator/workloads/*/workload-*.csv`):

    name,time,application,num_replicas,batch_size[,category]

Used: name (job id), time (arrival, seconds), application (-> model, table below), num_replicas (GPUs),
batch_size (global batch; sets the iterations). Dropped: category (Sia's scheduling class; ArtISt jobs are
rigid). The files state no run time: Pollux trains each application to a fixed epoch count, so the work
is iterations = epochs x ceil(training samples / batch_size), with the simulator's epochs
(adaptdl simulator/applications.py, max_epochs) and each dataset's size.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Iterator

from artist.errors import InputError
from artist.limits import MAX_ARRIVAL_S, MAX_GPUS, MAX_ITERATIONS
from artist.workload.traces.csvrows import cell, number
from artist.workload.traces.options import read_csv_table
from artist.workload.traces.record import LoadReport, TraceRecord

COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")
FIELDS_USED = COLUMNS
FIELDS_DROPPED = ("category",)

# application -> (ArtISt model, how it maps, epochs, training samples, source of the samples).
# Models: cifar10 trains ResNet-18 and imagenet ResNet-50 (Pollux Table 1: the same networks, name match;
# CIFAR-10 images are 32x32, so the ImageNet-size profile's step time overstates cifar10's); the others
# have no profile and take a stand-in of the same Pollux size category (S: resnet18 / mobilenet_v3_large,
# M: bert_large / alexnet, L: vgg11, XL: resnet50; see mapping.CATEGORY_MODELS).
APPLICATIONS = {
    "cifar10": ("resnet18", "name match (ResNet-18)", 100, 50_000, "CIFAR-10 training set, 50,000 images"),
    "imagenet": ("resnet50", "name match (ResNet-50)", 90, 1_281_167, "ImageNet-1k training set, 1,281,167 images"),
    "bert": ("bert_large", "family (BERT fine-tuning; Pollux category M)", 2, 87_599,
             "SQuAD v1.1 training set, 87,599 questions"),
    "yolov3": ("vgg11", "stand-in (YOLOv3, category L)", 50, 16_551, "PASCAL VOC 2007+2012 trainval, 16,551 images"),
    "deepspeech2": ("alexnet", "stand-in (DeepSpeech2, category M)", 80, 1_132,
                    "ESTIMATE: one CMU ARCTIC speaker, ~1,132 utterances (Pollux does not state the split)"),
    "ncf": ("mobilenet_v3_large", "stand-in (NeuMF, category S)", 10, 1_000_209,
            "ESTIMATE: MovieLens-1M, 1,000,209 ratings (NCF paper's dataset; Pollux says only 'MovieLens')"),
}


def read_pollux(path: str | Path, report: LoadReport, skip_bad: bool = False) -> Iterator[TraceRecord]:
    return read_csv_table(Path(path), COLUMNS, "Pollux/Sia workload", _record, report, skip_bad)


def _record(path: Path, lineno: int, row: dict) -> TraceRecord:
    where = f"line {lineno}"
    application = cell(row, "application", path, where)
    if application not in APPLICATIONS:
        raise InputError(str(path), f"{where}, column 'application'",
                         f"unknown application {application!r}; known: {', '.join(sorted(APPLICATIONS))}")
    batch = int(number(row, "batch_size", path, where, minimum=1, integer=True, maximum=MAX_ITERATIONS))
    _, _, epochs, samples, _ = APPLICATIONS[application]
    iterations = epochs * math.ceil(samples / batch)
    return TraceRecord(job_id=cell(row, "name", path, where),
                       submit=number(row, "time", path, where, minimum=0.0, maximum=MAX_ARRIVAL_S),
                       gpus=int(number(row, "num_replicas", path, where, minimum=1, integer=True, maximum=MAX_GPUS)),
                       where=where, model=application, iterations=iterations, batch_size=batch)


MODEL_TABLE = {name: (model, how) for name, (model, how, *_rest) in APPLICATIONS.items()}
