"""Game reproduction (seed 004, BugCraft): a macro-action GameDriver, the Minetest driver, and the agent."""

from agents.game.driver import GameCrash, GameDriverError, GameState
from agents.game.minetest import MinetestDriver
from agents.game.reproduce import GameReproResult, replay_command, replay_game, reproduce_game

__all__ = [
    "GameCrash",
    "GameDriverError",
    "GameReproResult",
    "GameState",
    "MinetestDriver",
    "replay_command",
    "replay_game",
    "reproduce_game",
]
