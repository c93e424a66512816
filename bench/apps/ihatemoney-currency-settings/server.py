"""`server.py PORT [--fixed]`: I Hate Money 6.1.4 (or 6.1.5) with a project in EUR that has bills."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from ihatemoney_app import Api, main  # noqa: E402


def seed(port: int) -> None:
    """A ski trip in EUR with two bills in EUR (no conversion: the rates API is never called)."""
    api = Api(port, "ski-trip", "powder")
    api.create_project("Ski trip", "powder", currency="EUR")
    ids = [api.member(name) for name in ("Ana", "Ben", "Chloe")]
    api.bill("Chalet", ids[0], ids, 600.0, currency="EUR")
    api.bill("Lift passes", ids[1], ids, 270.0, currency="EUR")


if __name__ == "__main__":
    main(HERE, seed)
