"""Fault localization: traceback frames, spectrum-based ranking, and test impact from coverage."""
