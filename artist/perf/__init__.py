"""Where compute and communication meet: compute model, performance model (estimate / rates)."""
