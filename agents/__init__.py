"""What decides, acting only through sandboxes.

Report reading, triage, reproduction, localization, repair, setup, and app and game reproduction.
"""
