"""One module per measured item of issue #6; each ``run(plan) -> dict``."""
