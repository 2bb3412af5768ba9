"""Fairness (R12): where a round's server seed comes from, the provably fair shuffle and deal,
the fairness proof of a dealt round, and the statistical tests of the deal's randomness."""
