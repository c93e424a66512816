"""Sales tax."""

DEFAULT_RATE = 0.0


def with_tax(amount, rate=DEFAULT_RATE):
    """Amount plus tax at `rate`, rounded to cents."""
    return round(amount * (1 + rate), 2)
