"""Trust and hygiene: forget, scrub, prune, staleness."""
