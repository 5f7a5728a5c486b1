# Reference solution of flatten-by-extension: one shell command a line, run from the work dir.
find mess -type f
find mess -type f | while IFS= read -r f; do b=$(basename "$f"); case "$b" in *.*) e=$(printf '%s' "${b##*.}" | tr 'A-Z' 'a-z');; *) e=noext;; esac; mkdir -p "sorted/$e" && mv "$f" "sorted/$e/$b"; done
find sorted -type f | sort
