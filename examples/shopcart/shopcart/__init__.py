"""A tiny shopping cart: line items, bulk discounts, tax."""

from shopcart.cart import Cart, LineItem

__all__ = ["Cart", "LineItem"]
