"""Hardening (issue #5): meaning kept by real servers, fuzzing, load and faults, security table."""
