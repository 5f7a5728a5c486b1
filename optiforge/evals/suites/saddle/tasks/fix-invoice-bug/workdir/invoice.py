"""Print each customer's invoice total from an orders CSV file.

The CSV file has a header row with the columns customer, qty and unit_price (a decimal
price such as 2.50). For every customer, in alphabetical (byte) order, print one line
`CUSTOMER: TOTAL` where TOTAL is the sum of qty * unit_price over the customer's rows,
with 2 decimals; then a last line `TOTAL: GRAND` with the sum over all rows.
"""

import csv
import sys


def totals(path: str) -> dict[str, float]:
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    out: dict[str, float] = {}
    for row in rows[1:]:
        amount = int(row["qty"]) * int(row["unit_price"])
        out[row["customer"]] = out.get(row["customer"], 0) + amount
    return out


def main() -> None:
    per_customer = totals(sys.argv[1])
    for customer in sorted(per_customer):
        print(f"{customer}: {per_customer[customer]:.2f}")
    print(f"TOTAL: {sum(per_customer.values()):.2f}")


if __name__ == "__main__":
    main()
