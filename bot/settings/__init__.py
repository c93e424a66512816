"""The deployment's settings, the per-repo policy, and the Jira project mapping."""
