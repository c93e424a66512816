"""The store: one SQLite file per deployment; all SQL lives in this package, one module per concern.

`bot.store.base` is the shared connection and transaction helper; `deliveries`, `jobs`, `runs`,
`publications` and `environments` hold one concern each; `facade.Store` composes them.
"""

from bot.store.base import StoreOnEventLoop, forbid_store_calls_on_loop
from bot.store.facade import Store
from bot.store.plans import DeliveryRecord, DeliveryRejected, PlannedAction, PlannedJob
from bot.store.rows import (
    DeliveryRow,
    EnvironmentRow,
    InstallationRow,
    IssueRow,
    JobRow,
    PatchRow,
    PrOutcomeRow,
    PublicationRow,
    ReviewRow,
    SelectionRow,
    StepRow,
    TrajectoryRow,
)
from bot.store.schema import LATEST_VERSION, SchemaTooNew, StoreError
from bot.store.sql import iso, parse_iso

__all__ = [
    "LATEST_VERSION",
    "DeliveryRecord",
    "DeliveryRejected",
    "DeliveryRow",
    "EnvironmentRow",
    "InstallationRow",
    "IssueRow",
    "JobRow",
    "PatchRow",
    "PlannedAction",
    "PlannedJob",
    "PrOutcomeRow",
    "PublicationRow",
    "ReviewRow",
    "SchemaTooNew",
    "SelectionRow",
    "StepRow",
    "Store",
    "StoreError",
    "StoreOnEventLoop",
    "TrajectoryRow",
    "forbid_store_calls_on_loop",
    "iso",
    "parse_iso",
]
