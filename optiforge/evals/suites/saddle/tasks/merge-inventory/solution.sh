# Reference solution of merge-inventory: one shell command a line, run from the work dir.
head inventory.csv updates.csv
python3 -c 'import csv; inv = {r["sku"]: r for r in csv.DictReader(open("inventory.csv"))}; [inv[u["sku"]].__setitem__("qty", str(int(inv[u["sku"]]["qty"]) + int(u["delta"]))) for u in csv.DictReader(open("updates.csv")) if u["sku"] in inv]; w = csv.writer(open("inventory_new.csv", "w", newline="")); w.writerow(["sku", "name", "qty"]); [w.writerow([s, inv[s]["name"], inv[s]["qty"]]) for s in sorted(inv) if int(inv[s]["qty"]) > 0]'
cat inventory_new.csv
