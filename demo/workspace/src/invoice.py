"""Invoice totals."""

from decimal import ROUND_HALF_UP, Decimal


def total(lines, vat_rate):
    net = sum(Decimal(str(q)) * Decimal(str(p)) for q, p in lines)
    vat = (net * Decimal(str(vat_rate))).quantize(Decimal("0.01"), ROUND_HALF_UP)
    return net + vat
