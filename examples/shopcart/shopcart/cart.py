"""The cart: line items and totals."""

from dataclasses import dataclass, field

from shopcart.discounts import apply_discount, bulk_rate
from shopcart.tax import with_tax


@dataclass
class LineItem:
    name: str
    unit_price: float
    quantity: int

    def subtotal(self):
        amount = self.unit_price * self.quantity
        return apply_discount(amount, bulk_rate(self.quantity))


@dataclass
class Cart:
    items: list = field(default_factory=list)
    tax_rate: float = 0.0

    def add(self, name, unit_price, quantity=1):
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        self.items.append(LineItem(name, unit_price, quantity))
        return self

    def total(self):
        return with_tax(sum(item.subtotal() for item in self.items), self.tax_rate)
