"""The job pipeline: triage, environment, generate, review, select; the job's types."""
