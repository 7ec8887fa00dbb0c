"""The checks: pure functions Facts -> Findings, one module per subject, grouped by layer.

Every module under this package is imported by doctor.engine.load_checks(), so a new check is
one decorated function in one file.
"""
