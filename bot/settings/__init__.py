"""The deployment's settings (every REPROBOT_* variable is a row of table.py), the repo policy, the Jira mapping."""
