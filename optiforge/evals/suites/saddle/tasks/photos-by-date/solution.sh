# Reference solution of photos-by-date: one shell command a line, run from the work dir.
ls -la inbox
for f in inbox/*; do b=$(basename "$f"); d=$(printf '%s\n' "$b" | sed -n 's/^[A-Z][A-Z]*_\([0-9]\{4\}\)\([0-9]\{2\}\)[0-9]\{2\}_[0-9]\{6\}\..*$/\1\/\2/p'); if [ -n "$d" ]; then mkdir -p "photos/$d" && mv "$f" "photos/$d/"; fi; done
find photos inbox -type f | sort
