"""Calibration against measured NCCL: nccl-tests logs in, a calibration profile out.

- nccl_tests: the log parser and its consistency checks
- correction: the per-tier correction (bandwidth factor, per-step latency)
- fit: logs -> simulated points -> least-squares corrections
- build: fitting a whole profile / checking a profile on new logs
- profile: profile YAML (artist.network.calibrated.Calibrated applies one)
- report: tables and busbw plots
"""

from artist.calibration.correction import TierCorrection, latency_hops
from artist.calibration.nccl_tests import NcclLog, NcclTest, SizeRow, parse_nccl_tests, parse_nccl_text
from artist.calibration.profile import CalibrationProfile, load_profile

__all__ = [
    "CalibrationProfile", "NcclLog", "NcclTest", "SizeRow", "TierCorrection", "latency_hops",
    "load_profile", "parse_nccl_tests", "parse_nccl_text",
]
