"""The job pipeline: one module per stage, the stage lists by job kind (`stages`), and the driver (`run`)."""
