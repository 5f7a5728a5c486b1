# Reference solution of sales-by-region: one shell command a line, run from the work dir.
head -n 5 sales.csv
python3 -c 'import csv, collections; t = collections.defaultdict(float); rows = list(csv.DictReader(open("sales.csv"))); [t.__setitem__(r["region"], t[r["region"]] + int(r["units"]) * float(r["unit_price"])) for r in rows]; open("region_revenue.csv", "w").write("region,revenue\n" + "".join("%s,%.2f\n" % (k, t[k]) for k in sorted(t)))'
cat region_revenue.csv
