"""`server.py PORT [--fixed]`: I Hate Money 7.0.1 (or 7.1.1) with the flat-share project of the report."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from ihatemoney_app import Api, main  # noqa: E402


def seed(port: int) -> None:
    """Five flatmates; a first bill shared by all, so removing one of them deactivates instead of deleting."""
    api = Api(port, "flatshare", "rent-split")
    api.create_project("Flatshare", "rent-split")
    ids = [api.member(name) for name in ("Alice", "Bob", "Carol", "Dave", "Erin")]
    api.bill("Internet box", ids[0], ids, 50.0)


if __name__ == "__main__":
    main(HERE, seed)
