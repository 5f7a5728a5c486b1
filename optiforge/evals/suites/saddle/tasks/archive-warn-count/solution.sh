# Reference solution of archive-warn-count: one shell command a line, run from the work dir.
tar -tzvf logs_backup.tar.gz
mkdir -p x && tar -xzf logs_backup.tar.gz -C x && gunzip -r x
cd x && find . -type f -name '*.log' | sed 's|^\./||' | sort | while IFS= read -r f; do echo "$f $(grep -cw WARN "$f")"; done > ../warn_counts.txt
cat warn_counts.txt
