import pytest

from shopcart import Cart


def test_small_order_has_no_discount():
    assert Cart().add("pen", 2.0, 5).total() == 10.0


def test_large_order_gets_bulk_discount():
    assert Cart().add("pen", 2.0, 20).total() == 36.0


def test_huge_order_gets_top_tier():
    assert Cart().add("pen", 1.0, 100).total() == 80.0


def test_tax_is_added():
    assert Cart(tax_rate=0.1).add("book", 10.0, 1).total() == 11.0


def test_quantity_must_be_positive():
    with pytest.raises(ValueError):
        Cart().add("pen", 2.0, 0)
