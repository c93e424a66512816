"""The read-only dashboard: jobs, a job's trajectories and patches, deliveries, runners (aiohttp + Jinja2).

Server-rendered HTML, no JavaScript. Every page needs a login (bot.dashboard.auth); without one the answer is
the login page with status 401, never data.
"""

from bot.dashboard.pages import setup_dashboard

__all__ = ["setup_dashboard"]
