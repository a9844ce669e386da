"""Nightly export of the day's invoices."""

import csv


def export(invoices, path):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "customer", "total"])
        for inv in invoices:
            w.writerow([inv.id, inv.customer, inv.total])
