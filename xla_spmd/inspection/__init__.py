"""Inspection: per value shardings, provenance, collectives and the predicted step, as rich
tables in a terminal and as one self-contained HTML report."""

from xla_spmd.inspection.report import (
    InspectReport,
    ValueInfo,
    build_report,
    inspect,
    inspect_module,
)

__all__ = ["InspectReport", "ValueInfo", "build_report", "inspect", "inspect_module"]
