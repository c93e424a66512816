"""`reprobot eval`: benchmark cases through the pipeline, oracle scoring, and the report."""
