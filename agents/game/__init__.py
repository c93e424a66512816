"""Game reproduction (seed 004, BugCraft): a macro-action GameDriver, the Minetest driver, and the agent."""
