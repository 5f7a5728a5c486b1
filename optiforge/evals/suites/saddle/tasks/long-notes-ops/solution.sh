# Reference solution of long-notes-ops: one shell command a line, run from the work dir.
ls inbox
grep -H '^Title:' inbox/*.txt
head -n 2 inbox/n1.txt
mkdir -p notes && mv inbox/n1.txt notes/backup-plan.txt
mkdir -p notes && mv inbox/n2.txt notes/disk-layout.txt
mkdir -p notes && mv inbox/n3.txt notes/alert-rules.txt
mkdir -p notes && mv inbox/n4.txt notes/cost-review.txt
ls notes
printf '# Index\n' > notes/INDEX.md
for f in notes/*.txt; do sed -n 's/^Title: //p' "$f"; done | sort | sed 's/^/- /' >> notes/INDEX.md
cat notes/INDEX.md
wc -l notes/INDEX.md
