"""The job core around the pipeline: the queue, the request builder, publishing, what was posted, hand-offs."""
