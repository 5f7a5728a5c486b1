# Reference solution of long-notes-launch: one shell command a line, run from the work dir.
ls inbox
grep -H '^Title:' inbox/*.txt
head -n 2 inbox/x1.txt
mkdir -p notes && mv inbox/x1.txt notes/risk-log.txt
mkdir -p notes && mv inbox/y5.txt notes/launch-steps.txt
mkdir -p notes && mv inbox/z3.txt notes/media-kit.txt
mkdir -p notes && mv inbox/w8.txt notes/exit-survey.txt
ls notes
printf '# Index\n' > notes/INDEX.md
for f in notes/*.txt; do sed -n 's/^Title: //p' "$f"; done | sort | sed 's/^/- /' >> notes/INDEX.md
cat notes/INDEX.md
wc -l notes/INDEX.md
