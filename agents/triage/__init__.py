"""Whether to act on a report: the abstention score, its features and reasons."""
