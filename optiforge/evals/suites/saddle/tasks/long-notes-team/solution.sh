# Reference solution of long-notes-team: one shell command a line, run from the work dir.
ls inbox
grep -H '^Title:' inbox/*.txt
head -n 2 inbox/a7.txt
mkdir -p notes && mv inbox/a7.txt notes/team-charter.txt
mkdir -p notes && mv inbox/b2.txt notes/oncall-guide.txt
mkdir -p notes && mv inbox/c9.txt notes/budget-draft.txt
mkdir -p notes && mv inbox/d4.txt notes/vendor-list.txt
ls notes
printf '# Index\n' > notes/INDEX.md
for f in notes/*.txt; do sed -n 's/^Title: //p' "$f"; done | sort | sed 's/^/- /' >> notes/INDEX.md
cat notes/INDEX.md
wc -l notes/INDEX.md
