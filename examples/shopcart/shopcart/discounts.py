"""Bulk discount rules."""

# (minimum quantity, discount rate), checked from the largest tier down.
BULK_TIERS = [(50, 0.20), (10, 0.10)]


def bulk_rate(quantity):
    """Discount rate for buying `quantity` units of one product."""
    for minimum, rate in BULK_TIERS:
        if quantity > minimum:
            return rate
    return 0.0


def apply_discount(amount, rate):
    """Amount after taking `rate` off, rounded to cents."""
    return round(amount * (1 - rate), 2)
