# Reference solution of todo-report: one shell command a line, run from the work dir.
grep -rn TODO src | head -n 20
{ echo file,line,owner; grep -rnoE 'TODO\([a-z]+\)' src | sed -E 's/^(.*):([0-9]+):TODO\(([a-z]+)\)$/\1,\2,\3/' | sort -t, -k1,1 -k2,2n; } > todos.csv
cat todos.csv
