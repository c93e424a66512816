"""The aiohttp app: webhooks, the runner API mount, the dashboard mount, health and metrics."""
