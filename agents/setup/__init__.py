"""The setup agent (ExecutionAgent): how to install and test a repo, proposed by a model, run in a sandbox."""
