"""Pure renderers: PR bodies and comments in markdown, Jira wiki markup, Atlassian Document Format."""
