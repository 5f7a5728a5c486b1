# Reference solution of merge-contacts: one shell command a line, run from the work dir.
head contacts_a.csv contacts_b.csv
python3 -c 'import csv; m = {}; [m.setdefault(r["email"].strip().lower(), {}).update({k: r[k].strip() for k in ("name", "phone") if r[k].strip()}) for f in ("contacts_a.csv", "contacts_b.csv") for r in csv.DictReader(open(f))]; w = csv.writer(open("contacts.csv", "w", newline="")); w.writerow(["email", "name", "phone"]); [w.writerow([e, m[e].get("name", ""), m[e].get("phone", "")]) for e in sorted(m)]'
cat contacts.csv
