"""Bug reproduction tests (BRTs) synthesized from a report's facts, and their checks."""
