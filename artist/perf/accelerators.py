"""What a GPU type computes and holds: peak dense tensor throughput, memory, achievable efficiency.

    accelerator("A100") -> Accelerator(peak_flops, memory_bytes, efficiency, sources)

Peaks are the datasheets' dense (no sparsity) FP16/BF16 tensor-core figures. Achieved
throughput = peak x efficiency, where the efficiency stands for everything a FLOP count
ignores (kernel efficiency, memory-bound element-wise work, launch gaps, data loading).

The A100's efficiency is calibrated on one published measurement and checked on others
(tests/test_hybrid_mfu.py; table in workloads/README.md): Narayanan et al. 2021 (SC'21),
Table 1, first row: GPT 1.7B, 32 A100-80GB, data parallel only (t = p = 1), batch 512,
137 TFLOP/s per GPU (44 % of 312) end to end. A100_EFFICIENCY is the efficiency at which
this project's model (compute + the α-β data-parallel all-reduce on topologies/dgx-a100.yaml,
not overlapped, as that Megatron-LM version did) reproduces that 137 TFLOP/s; the test
re-derives it. Other types have no calibration of their own here: they take the A100's
efficiency (ESTIMATE; a measured figure per type would replace it).
"""

from __future__ import annotations

from dataclasses import dataclass

TFLOPS = 1e12
GB = 1e9

# Derived by tests/test_hybrid_mfu.py::test_a100_efficiency_reproduces_its_calibration_row (see docstring).
A100_EFFICIENCY = 0.481  # 0.48109 re-derived by the test; 3 digits kept


@dataclass(frozen=True)
class Accelerator:
    name: str
    peak_flops: float  # dense FP16/BF16 tensor-core FLOP/s
    memory_bytes: float
    efficiency: float
    source: str

    @property
    def achieved_flops(self) -> float:
        return self.peak_flops * self.efficiency


ACCELERATORS = {
    a.name: a for a in (
        Accelerator("A100", 312 * TFLOPS, 80 * GB, A100_EFFICIENCY,
                    "NVIDIA A100 datasheet: 312 TFLOPS BF16/FP16 tensor (dense), A100-SXM4-80GB; efficiency "
                    "calibrated on Narayanan et al. 2021 Table 1 row 1"),
        Accelerator("H100", 989 * TFLOPS, 80 * GB, A100_EFFICIENCY,
                    "NVIDIA H100 datasheet: H100 SXM 1979 TFLOPS BF16 with sparsity = 989 dense, 80 GB; "
                    "efficiency: the A100's (estimate)"),
        Accelerator("V100", 125 * TFLOPS, 32 * GB, A100_EFFICIENCY,
                    "NVIDIA V100 datasheet: V100 SXM2 125 TFLOPS tensor, 32 GB; efficiency: the A100's (estimate)"),
        Accelerator("A40", 149.7 * TFLOPS, 48 * GB, A100_EFFICIENCY,
                    "NVIDIA A40 datasheet: 149.7 TFLOPS FP16 tensor (dense), 48 GB; efficiency: the A100's "
                    "(estimate)"),
        Accelerator("A10", 125 * TFLOPS, 24 * GB, A100_EFFICIENCY,
                    "NVIDIA A10 datasheet: 125 TFLOPS BF16 tensor (dense), 24 GB; efficiency: the A100's "
                    "(estimate)"),
    )
}


def accelerator(gpu_type: str) -> Accelerator:
    """The GPU type by its topology name (case and a vendor prefix ignored: 'a100', 'NVIDIA-A100')."""
    key = gpu_type.upper().replace("NVIDIA", "").strip(" -_")
    for name, spec in ACCELERATORS.items():
        if key == name or key.startswith(name + "-") or key.startswith(name + " "):
            return spec
    raise KeyError(f"no compute figures for GPU type {gpu_type!r}; known: {', '.join(ACCELERATORS)}")
