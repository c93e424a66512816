"""`server.py PORT [--fixed]`: I Hate Money 6.0.0 (or 6.0.1) with the flat-share project to log in to."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from ihatemoney_app import Api, main  # noqa: E402


def seed(port: int) -> None:
    """A project to log in to first."""
    api = Api(port, "flatshare", "rent-split")
    api.create_project("Flatshare", "rent-split")
    ids = [api.member(name) for name in ("Alice", "Bob")]
    api.bill("Internet box", ids[0], ids, 30.0)


if __name__ == "__main__":
    main(HERE, seed)
