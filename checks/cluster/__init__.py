"""cluster-layer checks: compare the nodes of a Ray cluster (`run --ray`, or a saved cluster bundle)."""
