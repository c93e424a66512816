"""Mojira (bugs.mojang.com): the public read-only search, typed reports, game triage, sinks and the poller.

`fields` and `triage` are pure; `client` is the one I/O point to Mojira; `sinks` are where results go;
`poller` ties them to the store's cursor.
"""
