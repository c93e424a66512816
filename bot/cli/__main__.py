"""`python -m bot.cli`: the `reprobot` console script without the script."""

import sys

from bot.cli import main

sys.exit(main())
